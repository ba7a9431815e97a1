// Package spotcheck lets a training job run on cheap, interruptible (spot or
// preemptible) machines without losing work or money.
//
// The module is four independent packages that an embedder composes:
//
//   - [github.com/spotcheck/spotcheck/storage] opens any blob store by URL
//     (file://, mem://, s3://, gs://, azblob://) as a gocloud.dev *blob.Bucket,
//     with a local-disk backend that is durable across crashes and safe
//     across processes.
//   - [github.com/spotcheck/spotcheck/checkpoint] keeps rotating, verified,
//     atomically committed checkpoints in such a bucket, with async and
//     deadline-aware emergency saves and a Young/Daly checkpoint schedule.
//   - [github.com/spotcheck/spotcheck/interrupt] turns a cloud's interruption
//     notice (AWS, GCP, Azure, or an OS signal) into a context cancelled with
//     a cause that says what is coming and by when.
//   - [github.com/spotcheck/spotcheck/pricing] ranks spot offers by the
//     expected cost of the whole job, not the hourly price.
//
// checkpoint, interrupt and pricing never import each other; they meet in the
// embedder's code, passing plain values (a *blob.Bucket, a time.Duration, a
// float64). A typical training service:
//
//	bucket, _ := storage.Open(ctx, "s3://my-bucket?prefix=run-7/")
//	store, _ := checkpoint.New(bucket, nil)
//	ctx, stop := interrupt.NotifyContext(ctx, interrupt.AWS(nil), interrupt.Signals(30*time.Second))
//	defer stop()
//	// resume from store.Latest(ctx), train until ctx.Done(), then make an
//	// emergency save within interrupt.GraceContext(ctx, margin).
//
// The runnable version of this is examples/trainer.
package spotcheck
