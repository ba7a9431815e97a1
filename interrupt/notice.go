package interrupt

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Kind says what is coming.
type Kind string

// The kinds of notice.
const (
	KindTerminate   Kind = "terminate"   // the machine will be deleted (AWS terminate, GCP preempted, Azure Preempt/Terminate)
	KindStop        Kind = "stop"        // the machine will be stopped (AWS spot stop)
	KindHibernate   Kind = "hibernate"   // the machine will be hibernated (AWS spot hibernate)
	KindRebalance   Kind = "rebalance"   // advisory: elevated risk of interruption (AWS rebalance recommendation)
	KindMaintenance Kind = "maintenance" // scheduled maintenance (AWS scheduled events, GCP maintenance-event, Azure Reboot/Redeploy/Freeze)
	KindSignal      Kind = "signal"      // an OS signal (SIGTERM from Kubernetes, SIGINT from a terminal)
)

// Source names used in Notice.Source.
const (
	SourceAWS    = "aws"
	SourceGCP    = "gcp"
	SourceAzure  = "azure"
	SourceSignal = "signal"
)

// ErrInterrupted matches every *Notice with errors.Is, so code that only
// sees the context cause can ask "was this an interruption?" without
// importing the Notice type.
var ErrInterrupted = errors.New("interrupt: machine is being reclaimed")

// A Notice says what is coming and by when. *Notice implements error: it
// is the cause of a context cancelled by NotifyContext or Watcher.Context.
type Notice struct {
	Kind     Kind
	Source   string    // SourceAWS, SourceGCP, SourceAzure, SourceSignal or a custom source's name
	Deadline time.Time // when the machine goes away; zero if the source does not say (rebalance)
	Detected time.Time // when this process saw the notice
	Advisory bool      // true for notices that do not by themselves mean the machine goes away
	// ID identifies the event within its source (the spot action, the
	// AWS/Azure EventId, the signal). Two notices with the same Source,
	// Kind and ID are the same event and are delivered once. Azure's
	// AzureSource.Ack takes it.
	ID string
	// Detail is the raw payload as received (JSON document, metadata value,
	// signal name), for logs.
	Detail string
}

// Error describes the notice. It does not depend on the current time.
func (n *Notice) Error() string {
	adv := ""
	if n.Advisory {
		adv = "advisory "
	}
	dl := "unknown"
	if !n.Deadline.IsZero() {
		dl = n.Deadline.UTC().Format(time.RFC3339)
	}
	id := ""
	if n.ID != "" && n.ID != string(n.Kind) {
		id = " (" + n.ID + ")"
	}
	return fmt.Sprintf("interrupt: %s%s notice from %s%s, deadline %s", adv, n.Kind, n.Source, id, dl)
}

// Is reports whether target is ErrInterrupted.
func (n *Notice) Is(target error) bool { return target == ErrInterrupted }

// Remaining returns the time left until the deadline measured from now,
// or false if the notice has no deadline.
func (n *Notice) Remaining(now time.Time) (time.Duration, bool) {
	if n.Deadline.IsZero() {
		return 0, false
	}
	return n.Deadline.Sub(now), true
}

// key is the identity used to deliver a notice once.
func (n *Notice) key() string { return n.Source + "\x00" + string(n.Kind) + "\x00" + n.ID }

// FromContext returns the Notice that cancelled ctx, if any: the cause of
// a context returned by NotifyContext or Watcher.Context, or of any
// context derived from one.
func FromContext(ctx context.Context) (*Notice, bool) {
	var n *Notice
	if errors.As(context.Cause(ctx), &n) {
		return n, true
	}
	return nil, false
}

// GraceContext returns a context for the work to do after a notice (the
// emergency checkpoint): it keeps ctx's values but is not cancelled when
// ctx is, and it ends at the notice's deadline minus margin. If ctx
// carries no notice, or the notice has no deadline, the returned context
// has no deadline and ends only when cancel is called. The caller must
// call cancel.
func GraceContext(ctx context.Context, margin time.Duration) (context.Context, context.CancelFunc) {
	base := context.WithoutCancel(ctx)
	if n, ok := FromContext(ctx); ok && !n.Deadline.IsZero() {
		return context.WithDeadline(base, n.Deadline.Add(-margin))
	}
	return context.WithCancel(base)
}
