// Package storagetest is the conformance suite every spotcheck bucket must
// pass, whatever its backend: memblob, the durable local backend and a real
// S3 server all run it in storage's tests.
//
// Run(t, open) runs these subtests, each on a bucket returned by open:
//
//   - RoundTrip: objects of 0 B to 17 MiB written in uneven chunks read back
//     byte for byte, and a range read.
//   - Large: a 256 MiB object streamed from a seeded generator, verified by
//     SHA-256, while the growth of the live heap (sampled after forced
//     garbage collections) stays under 64 MiB for the write and the read.
//   - List: prefixes and the "/" delimiter, including keys that sort around
//     the delimiter ("c-x" < "c/" < "cc"), and paging.
//   - CreateIfAbsent and CreateIfAbsentRace: a create with
//     WriterOptions.IfNotExist over an existing object fails with an error
//     storage.IsExists recognises and leaves the object alone; of 8
//     goroutines racing to create one key, exactly one wins, every loser
//     gets that error and the object holds the winner's bytes.
//   - Delete: the object is gone for reads, Exists, Attributes and List; a
//     second Delete reports not found.
//   - Attributes: size, content type, metadata, MD5 (when present), ModTime
//     and an ETag that changes with the content.
//   - CancelWrite: cancelling the context in the middle of a 1 MiB and a
//     24 MiB write makes Close fail and leaves nothing visible.
//
// RunWithOptions adjusts the suite for a backend (a smaller object for an
// in-memory store, writer options for S3's multipart buffering); the
// assertions themselves are the same for every backend.
package storagetest
