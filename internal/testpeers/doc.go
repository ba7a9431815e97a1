// Package testpeers starts real servers (S3, EC2 metadata) for tests.
package testpeers
