// Trainer trains a small gorgonia network and survives interruptions: it is
// the template for a training job on spot or preemptible machines.
//
// The model is a multilayer perceptron (64 -> 64 -> 32 -> 10, ReLU,
// softmax cross-entropy, float64) on the 8x8 handwritten digits that ship
// with scikit-learn (1797 images, embedded from data/digits.csv.gz; see
// data/README.md for its origin and licence), split 80/20 into training
// and test sets by -seed. The optimizer is Adam, written over the gorgonia
// nodes' values and gradients so that its moments are plain slices the
// checkpoint carries.
//
// It composes the library the way an embedder would:
//
//   - storage.Open opens -store (a directory or any bucket URL) and
//     checkpoint.New keeps the newest -keep checkpoints in it. A
//     checkpoint has four parts: "model" and "optimizer" in the
//     safetensors format (checkpoint.TensorPart; Python's
//     safetensors.numpy.load_file opens them), "data" (the run's
//     configuration and the data loader's generator state, permutation and
//     position) and "history" (every step's loss and the interruption and
//     resume events).
//   - At start it resumes from checkpoint.Store.Latest, the newest intact
//     checkpoint; otherwise it initialises the weights from -seed with its
//     own generator (gorgonia's initialisers seed from the clock). Because
//     the whole state is restored, a resumed run computes bit for bit what
//     the uninterrupted run would have: the tests compare the final
//     weights' sha256.
//   - Periodic checkpoints go through checkpoint.Async (the loop hands over
//     a copy and keeps training) every -every steps or, by default, when
//     checkpoint.Schedule's Young/Daly interval sqrt(2 x save cost x -mtbf)
//     has passed.
//   - interrupt.Watch runs the sources interrupt.Detect returns (the
//     cloud's metadata service, if any, and SIGTERM/SIGINT). On a final
//     notice the loop stops at the next step boundary, waits for a save in
//     flight, makes an emergency checkpoint within the notice's deadline
//     (interrupt.GraceContext, minus -margin), writes the loss curve and
//     exits with status 75 (EX_TEMPFAIL): run it again to resume.
//     Advisory notices (rebalance recommendations) are logged and training
//     continues. -interrupt-at STEP simulates a notice, for demos.
//
// On a terminal it shows a progress bar; otherwise it logs JSON lines
// (log/slog) to stderr. At the end it prints the test accuracy and
// "final weights sha256: <hex>", and writes a PNG loss curve (-plot) with a
// vertical line at every interruption and resume.
//
// Exit status: 0 done, 1 error, 2 bad flags, 75 interrupted (state saved;
// run again to resume).
//
// Usage, from the examples directory:
//
//	go run ./trainer                 # trains ~12000 steps, checkpoints to ./checkpoints
//	^C                               # emergency checkpoint, exit status 75
//	go run ./trainer                 # resumes where it stopped
//	go run ./trainer -store 's3://bucket?region=eu-west-1&prefix=run-1/'
package main
