// Package faultblob wraps a *blob.Bucket so that tests can inject faults
// into the operations other packages make on it.
//
// Wrap returns a new *blob.Bucket whose driver forwards every call to the
// portable API of the wrapped bucket (gocloud's drivers are unexported, so
// the wrapper cannot sit between blob.Bucket and the inner driver; it sits
// on top of the inner *blob.Bucket instead). It therefore works over any
// backend: memblob, the local file backend, S3.
//
// A Plan is a list of Rules. Each rule matches an operation kind (Op) and,
// optionally, a key pattern (path.Match syntax, or a plain prefix ending in
// '*'), and fires on the Nth matching operation (or on every one when Nth is
// 0). When it fires it performs its Action: fail, fail after the effect took
// place (a lost acknowledgement), truncate, corrupt, delay or hang until the
// operation's context is done.
//
// The plan counts every operation it sees, per Op, with thread-safe
// counters. A test that wants to fault "the k-th operation of a save at
// random" first runs the save once over an empty plan, reads Count(OpAny),
// picks k in [1, Count] and adds Rule{Op: OpAny, Nth: k, ...}.
//
// Operation kinds and where they are counted:
//
//	OpWrite       once per object written (NewWriter); faults act on the bytes
//	OpClose       once per writer Close (the moment an object becomes visible)
//	OpRead        once per reader opened (NewReader / NewRangeReader)
//	OpList        once per listed page
//	OpDelete      once per Delete
//	OpAttributes  once per Attributes
//	OpCopy        once per Copy
//
// With an empty plan the wrapper is transparent; it passes gocloud's
// blob/drivertest conformance suite.
package faultblob
