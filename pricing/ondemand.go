package pricing

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
)

// PriceListAPI is the part of the AWS Price List client (*pricing.Client
// of github.com/aws/aws-sdk-go-v2/service/pricing) that OnDemand uses.
type PriceListAPI interface {
	GetProducts(ctx context.Context, in *awspricing.GetProductsInput, optFns ...func(*awspricing.Options)) (*awspricing.GetProductsOutput, error)
}

var _ PriceListAPI = (*awspricing.Client)(nil)

// OnDemandPricer returns the on-demand price of an instance type in a
// region, USD per hour. *OnDemand implements it; tests and offline tools
// can use a map (see OnDemandTable).
type OnDemandPricer interface {
	OnDemandPrice(ctx context.Context, region, instanceType string) (float64, error)
}

// OnDemandTable is a fixed OnDemandPricer: region -> instance type -> USD per hour.
type OnDemandTable map[string]map[string]float64

// OnDemandPrice implements OnDemandPricer.
func (t OnDemandTable) OnDemandPrice(_ context.Context, region, instanceType string) (float64, error) {
	p, ok := t[region][instanceType]
	if !ok {
		return 0, fmt.Errorf("%w: no on-demand price for %s in %s", ErrNoData, instanceType, region)
	}
	if !(p > 0) || math.IsInf(p, 0) {
		return 0, fmt.Errorf("%w: on-demand price %v for %s in %s", ErrInvalidPrice, p, instanceType, region)
	}
	return p, nil
}

// OnDemandOptions configure OnDemand. nil means all defaults.
type OnDemandOptions struct {
	// TTL is how long a price is cached (default 24h).
	TTL time.Duration
	// OperatingSystem is the Price List operatingSystem filter (default "Linux").
	OperatingSystem string
	// Now returns the current time (default time.Now).
	Now func() time.Time
	// Logger receives debug records (nil = silent).
	Logger *slog.Logger
}

func (o *OnDemandOptions) withDefaults() OnDemandOptions {
	var v OnDemandOptions
	if o != nil {
		v = *o
	}
	if v.TTL <= 0 {
		v.TTL = 24 * time.Hour
	}
	if v.OperatingSystem == "" {
		v.OperatingSystem = "Linux"
	}
	if v.Now == nil {
		v.Now = time.Now
	}
	if v.Logger == nil {
		v.Logger = slog.New(slog.DiscardHandler)
	}
	return v
}

// OnDemand reads on-demand prices from the AWS Price List API
// (GetProducts, service AmazonEC2, filters instanceType, regionCode,
// operatingSystem, tenancy=Shared, preInstalledSw=NA, capacitystatus=Used)
// and caches them for a TTL. It is safe for concurrent use.
type OnDemand struct {
	api  PriceListAPI
	opts OnDemandOptions

	mu    sync.Mutex
	cache map[[2]string]cachedPrice
}

type cachedPrice struct {
	price   float64
	expires time.Time
}

// NewOnDemand returns an OnDemand over api.
func NewOnDemand(api PriceListAPI, opts *OnDemandOptions) *OnDemand {
	return &OnDemand{api: api, opts: opts.withDefaults(), cache: map[[2]string]cachedPrice{}}
}

// priceListRegions are the regions the Price List API answers in.
var priceListRegions = []string{"us-east-1", "eu-central-1", "ap-south-1"}

// NewOnDemandFromConfig makes a Price List client from cfg. The API is
// served only in us-east-1, eu-central-1 and ap-south-1; any other
// cfg.Region is replaced by us-east-1 (prices of every region are served
// from each endpoint).
func NewOnDemandFromConfig(cfg aws.Config, opts *OnDemandOptions, optFns ...func(*awspricing.Options)) *OnDemand {
	if !slices.Contains(priceListRegions, cfg.Region) {
		cfg.Region = "us-east-1"
	}
	return NewOnDemand(awspricing.NewFromConfig(cfg, optFns...), opts)
}

// OnDemandPrice returns the on-demand price of instanceType in region, USD
// per hour, from the cache or the Price List API. It reads every page. No
// matching product is an error wrapping ErrNoData; a malformed document,
// ErrMalformedFeed. When several products match with different prices (it
// should not happen with these filters) the highest is returned, so that
// savings are never overstated.
func (o *OnDemand) OnDemandPrice(ctx context.Context, region, instanceType string) (float64, error) {
	if !ValidRegion(region) {
		return 0, fmt.Errorf("%w: %q is not an AWS region name", ErrUnknownRegion, region)
	}
	if instanceType == "" {
		return 0, fmt.Errorf("pricing: on-demand price: empty instance type")
	}
	key := [2]string{region, instanceType}
	now := o.opts.Now()
	o.mu.Lock()
	c, ok := o.cache[key]
	o.mu.Unlock()
	if ok && now.Before(c.expires) {
		return c.price, nil
	}
	term := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Field: aws.String(field), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(value)}
	}
	in := &awspricing.GetProductsInput{
		ServiceCode:   aws.String("AmazonEC2"),
		FormatVersion: aws.String("aws_v1"),
		Filters: []pricingtypes.Filter{
			term("instanceType", instanceType),
			term("regionCode", region),
			term("operatingSystem", o.opts.OperatingSystem),
			term("tenancy", "Shared"),
			term("preInstalledSw", "NA"),
			term("capacitystatus", "Used"),
		},
	}
	best := math.NaN()
	p := awspricing.NewGetProductsPaginator(o.api, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return 0, fmt.Errorf("pricing: on-demand price of %s in %s: %w", instanceType, region, err)
		}
		for i, doc := range out.PriceList {
			prod, err := ParsePriceListDocument([]byte(doc))
			if err != nil {
				return 0, fmt.Errorf("pricing: on-demand price of %s in %s: PriceList[%d]: %w", instanceType, region, i, err)
			}
			if prod.InstanceType != instanceType || (prod.RegionCode != "" && prod.RegionCode != region) {
				continue // the API filtered loosely; not ours
			}
			if math.IsNaN(best) || prod.USDPerHour > best {
				best = prod.USDPerHour
			}
		}
	}
	if math.IsNaN(best) {
		return 0, fmt.Errorf("%w: no on-demand %s price for %s in %s", ErrNoData, o.opts.OperatingSystem, instanceType, region)
	}
	o.mu.Lock()
	o.cache[key] = cachedPrice{price: best, expires: now.Add(o.opts.TTL)}
	o.mu.Unlock()
	o.opts.Logger.Debug("on-demand price", "region", region, "type", instanceType, "usd_per_hour", best)
	return best, nil
}

// PriceListProduct is what this package reads from one Price List
// document.
type PriceListProduct struct {
	SKU             string
	InstanceType    string
	RegionCode      string
	OperatingSystem string
	Tenancy         string
	// USDPerHour is the OnDemand term's hourly price.
	USDPerHour float64
}

type priceListDoc struct {
	Product *struct {
		SKU        string            `json:"sku"`
		Attributes map[string]string `json:"attributes"`
	} `json:"product"`
	Terms *struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// ParsePriceListDocument parses one element of GetProducts' PriceList (a
// JSON document per product) and returns its OnDemand hourly USD price:
// terms.OnDemand.<offer>.priceDimensions.<rate>.pricePerUnit.USD with unit
// "Hrs". Missing keys, no hourly dimension, several different hourly
// prices, or a price that is not a positive number are errors wrapping
// ErrMalformedFeed or ErrInvalidPrice.
func ParsePriceListDocument(doc []byte) (PriceListProduct, error) {
	var d priceListDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return PriceListProduct{}, fmt.Errorf("%w: price list document: %v", ErrMalformedFeed, err)
	}
	if d.Product == nil {
		return PriceListProduct{}, fmt.Errorf("%w: price list document: missing key \"product\"", ErrMalformedFeed)
	}
	a := d.Product.Attributes
	p := PriceListProduct{
		SKU:             d.Product.SKU,
		InstanceType:    a["instanceType"],
		RegionCode:      a["regionCode"],
		OperatingSystem: a["operatingSystem"],
		Tenancy:         a["tenancy"],
	}
	if p.InstanceType == "" {
		return p, fmt.Errorf("%w: price list document (sku %q): missing key \"product.attributes.instanceType\"", ErrMalformedFeed, p.SKU)
	}
	if d.Terms == nil || len(d.Terms.OnDemand) == 0 {
		return p, fmt.Errorf("%w: price list document (sku %q): missing key \"terms.OnDemand\"", ErrMalformedFeed, p.SKU)
	}
	found := false
	// Walk in key order so the error for a bad document is deterministic.
	offers := make([]string, 0, len(d.Terms.OnDemand))
	for k := range d.Terms.OnDemand {
		offers = append(offers, k)
	}
	slices.Sort(offers)
	for _, ok := range offers {
		dims := d.Terms.OnDemand[ok].PriceDimensions
		rates := make([]string, 0, len(dims))
		for k := range dims {
			rates = append(rates, k)
		}
		slices.Sort(rates)
		for _, rk := range rates {
			dim := dims[rk]
			if !strings.EqualFold(dim.Unit, "Hrs") {
				continue
			}
			usd, has := dim.PricePerUnit["USD"]
			if !has {
				return p, fmt.Errorf("%w: price list document (sku %q): terms.OnDemand[%q].priceDimensions[%q]: missing key \"pricePerUnit.USD\"", ErrMalformedFeed, p.SKU, ok, rk)
			}
			v, err := ParsePrice(usd)
			if err != nil {
				return p, fmt.Errorf("price list document (sku %q): terms.OnDemand[%q].priceDimensions[%q].pricePerUnit.USD: %w", p.SKU, ok, rk, err)
			}
			if found && v != p.USDPerHour {
				return p, fmt.Errorf("%w: price list document (sku %q): several hourly OnDemand prices (%v and %v)", ErrMalformedFeed, p.SKU, p.USDPerHour, v)
			}
			p.USDPerHour, found = v, true
		}
	}
	if !found {
		return p, fmt.Errorf("%w: price list document (sku %q): no hourly (unit \"Hrs\") OnDemand price dimension", ErrMalformedFeed, p.SKU)
	}
	return p, nil
}
