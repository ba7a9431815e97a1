// Package cloudwatchslog is an optional log/slog handler that ships records
// to Amazon CloudWatch Logs with PutLogEvents, in batches.
//
// It replaces the seed tutorial's logger, which sent one PutLogEvents request
// per record from the training loop and swallowed every error. Here a record
// is formatted as one JSON object (the same text slog.JSONHandler writes) and
// put on a bounded queue; Handle never blocks on the network. A background
// goroutine collects queued records into batches and sends a batch when it
// reaches the service's limits or when the flush interval passes:
//
//   - at most 10,000 events per request;
//   - at most 1,048,576 bytes per request, counting each message's UTF-8
//     length plus 26 bytes of overhead per event;
//   - events in a request sorted by timestamp (records from concurrent
//     goroutines, or with an explicit time, may arrive out of order);
//   - the events of one request spanning less than 24 hours;
//   - a single message at most 1,048,576 - 26 bytes: longer ones are
//     truncated at a UTF-8 boundary and counted.
//
// The log group and stream are created on the first send if missing
// (ResourceAlreadyExistsException is success), and again if PutLogEvents
// reports ResourceNotFoundException. Throttling and transient errors are
// retried by the SDK client's retryer (ThrottlingException is retryable in
// aws-sdk-go-v2's standard retryer); configure it on the client.
//
// Nothing is dropped silently. A record is lost when the queue is full, when
// it arrives after Close, when its batch fails after the SDK's retries, or
// when CloudWatch rejects it as too old or too new; each case is counted in
// Stats, reported to Options.OnError, and Close returns an error wrapping
// ErrDropped with the totals. Flush and Close take a context and return when
// it is done, whatever the network does.
//
// The handler is off unless an embedder creates one: the trainer example
// enables it with a flag and combines it with its stdout handler through
// slog.NewMultiHandler.
package cloudwatchslog
