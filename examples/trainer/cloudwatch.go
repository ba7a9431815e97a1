package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"

	"github.com/spotcheck/spotcheck/examples/internal/cloudwatchslog"
)

// openCloudWatch returns the batching CloudWatch Logs handler that the seed
// tutorial's SpotTrainingLogger was meant to be: training metrics and
// interruption events reach the log group even when the machine is taken
// back, and nothing is dropped silently (Close reports losses).
func openCloudWatch(ctx context.Context, o *options) (*cloudwatchslog.Handler, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	stream := o.CWStream
	if stream == "" {
		host, _ := os.Hostname()
		stream = fmt.Sprintf("trainer-%s-%s", host, time.Now().UTC().Format("20060102T150405Z"))
	}
	var optFns []func(*cloudwatchlogs.Options)
	if o.CWEndpoint != "" {
		optFns = append(optFns, func(co *cloudwatchlogs.Options) { co.BaseEndpoint = aws.String(o.CWEndpoint) })
	}
	return cloudwatchslog.NewFromConfig(cfg, &cloudwatchslog.Options{Group: o.CWGroup, Stream: stream}, optFns...)
}
