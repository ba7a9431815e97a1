// Package interrupt turns every way a cloud announces that it will take a
// machine back into one Go idiom: a context cancelled with a cause that
// says what is coming and by when.
//
// # Model
//
// A [Source] watches one channel of announcements: the EC2 instance
// metadata service ([AWS]: spot/instance-action, the rebalance
// recommendation, scheduled events), the Compute Engine metadata server
// ([GCP]: instance/preempted and instance/maintenance-event, long-polled),
// Azure Scheduled Events ([Azure]: Preempt, Terminate, Reboot, Redeploy,
// Freeze), or OS signals ([Signals]: SIGTERM is how Kubernetes passes a
// spot reclaim on to a pod). [Detect] finds which cloud the process runs
// on with fast probes and returns that cloud's source plus Signals.
//
// Every announcement becomes a [*Notice]: its [Kind] (terminate, stop,
// hibernate, rebalance, maintenance, signal), its Source, the Deadline when
// the machine goes away, when it was Detected, and whether it is Advisory.
// A final notice (spot terminate/stop/hibernate, GCP preemption, Azure
// Preempt/Terminate, a signal) means the machine goes away; an advisory one
// (rebalance recommendation, scheduled maintenance days ahead, a live
// migration) only says that the risk went up. The same event seen on many
// polls is delivered once.
//
// *Notice implements error. [NotifyContext] mirrors
// os/signal.NotifyContext: its context is cancelled, with the Notice as
// cause (context.WithCancelCause), on the first final notice; [FromContext]
// recovers it, and errors.Is(cause, [ErrInterrupted]) holds. Advisory
// notices cancel nothing unless [Options].Cancel says so. A [Watcher]
// (from [Watch]) also hands every notice, advisory ones included, to a
// channel and to Options.OnNotice.
//
// After the cancellation the program has until the deadline to save its
// state: [GraceContext] returns a context that is not cancelled by the
// notice but ends at the notice's deadline minus a margin, for the
// emergency checkpoint.
//
// # Failure
//
// A metadata service that times out, refuses connections, answers 5xx,
// 429 or 401 (an expired IMDSv2 token: the SDK fetches a new one), sends a
// malformed document or hangs is retried with jittered exponential backoff
// (starting at the poll interval, capped by MaxBackoff) and logged through
// an optional *slog.Logger. A failure is never a notice and never a panic.
// Stop (or the stop function of NotifyContext) waits until every goroutine
// the watcher started has returned and closes idle connections.
//
// # Latency and cost
//
// AWS is polled every second by default (spot/instance-action; the
// rebalance and scheduled-event paths every EventsInterval), so a notice is
// seen about half an interval after it appears, on average, out of AWS's
// two minutes. GCP long-polls with wait_for_change and ETags, so a
// preemption is seen one round trip after it is announced, out of 30
// seconds. Azure is polled every second, as its documentation advises.
package interrupt
