// Package checkpoint is a rotating, verified, atomic checkpoint store over
// any gocloud.dev/blob bucket (local disk, S3, GCS, Azure, memory).
//
// A checkpoint is a step number (int64 >= 0, chosen by the embedder: an
// epoch or an optimizer step), metadata (epoch, metrics, labels) and named
// parts, streams of bytes such as "model", "optimizer", "rng". A Store
// writes them with a commit protocol that never exposes a partial
// checkpoint and never overwrites committed data:
//
//  1. Begin(step) picks a fresh attempt id; Create(name) streams each part
//     to steps/<key>/<attempt>/<name>, a key no one else writes, hashing
//     it (sha256) as it goes.
//  2. Commit writes steps/<key>/MANIFEST.json with create-if-absent. The
//     manifest is versioned, canonical JSON with every part's size and
//     digest, the metadata, the writer's identity and its own digest. It is
//     the single commit point: of two writers of one step exactly one wins,
//     the other gets ErrStepExists and its parts are removed.
//  3. After the commit the LATEST object is updated (a hint for people and
//     tools) and the retention policy runs.
//
// <key> is 9223372036854775807-step, zero-padded to 19 digits, so that
// step directories list newest first: Latest lists one page of "steps/"
// and reads the first manifest that exists, two requests however many
// checkpoints the store holds, and can never miss a commit whose LATEST
// update was lost in a crash. A manifest that does not verify is passed
// over: Latest falls back to the previous intact checkpoint, logs a
// warning and lists what it skipped in Checkpoint.Fallback. Reading a part
// through Checkpoint.Open checks size and digest; a mismatch surfaces as
// ErrCorrupt from the final Read and from Close. Options.Verify makes
// Latest check part sizes or every byte before it answers; Store.Verify
// checks every byte of one step.
//
// Retention policies (KeepLast, KeepBest, KeepEvery, KeepEveryDuration,
// composed with Any: keep if any policy keeps) run after each successful
// commit. The newest committed checkpoint is always kept; deletion removes
// the manifest first, so a half-deleted checkpoint is invisible rather than
// corrupt. Attempts no manifest references (crashed or losing writers) are
// collected once older than Options.GracePeriod.
//
// Async overlaps saving with training: Save copies the state into buffers
// it owns and returns; one save runs at a time, the next Save waits for it
// (back-pressure), and a failure is returned by the next Save, Wait or
// Close. A save honours its context deadline; Store.EstimateSave and
// Store.Fits use the measured throughput of past saves to say whether a
// save of n bytes fits before an interruption deadline. Schedule picks the
// checkpoint interval by Young/Daly, sqrt(2*C*MTBF), clamped to [Min, Max].
//
// WriteTensors and ReadTensors store float32/float64 tensors in the
// safetensors format, so Python can load a model part with the
// safetensors package (or 20 lines of json and struct).
package checkpoint
