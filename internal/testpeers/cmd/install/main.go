// Command install installs the pinned test tools (see testpeers.Tools) into
// <repo>/.cache/bin and prints the path of each, one a line. .ci/run uses it
// so that CI, a developer and the tests build the same versions.
//
//	go run ./internal/testpeers/cmd/install staticcheck versitygw ec2-metadata-mock
package main

import (
	"fmt"
	"os"

	"github.com/spotcheck/spotcheck/internal/testpeers"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: install TOOL...")
		os.Exit(2)
	}
	for _, name := range os.Args[1:] {
		path, err := testpeers.Install(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "install:", err)
			os.Exit(1)
		}
		fmt.Println(path)
	}
}
