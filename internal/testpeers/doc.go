// Package testpeers starts real servers for tests: versitygw (a real S3
// gateway) and amazon-ec2-metadata-mock (AWS's own EC2 instance metadata
// mock), each at the version pinned in [Tools], installed on first use with
// `go install` into <repo>/.cache/bin, bound to 127.0.0.1 on a free port,
// waited on until it answers, and stopped when the test ends.
//
// A server that cannot start fails the test with its output; it never skips
// it, so a green run always means the real peer was exercised.
package testpeers
