package storage_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"gocloud.dev/blob"

	"github.com/spotcheck/spotcheck/storage"
)

func ExampleOpen() {
	ctx := context.Background()
	b, err := storage.Open(ctx, "mem://?prefix=run-7/")
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	if err := b.WriteAll(ctx, "LATEST", []byte("1200"), nil); err != nil {
		log.Fatal(err)
	}
	data, err := b.ReadAll(ctx, "LATEST")
	fmt.Println(string(data), err)

	_, err = b.ReadAll(ctx, "missing")
	fmt.Println(storage.IsNotFound(err))
	// Output:
	// 1200 <nil>
	// true
}

func ExampleOpen_file() {
	dir, err := os.MkdirTemp("", "spotcheck-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	b, err := storage.Open(ctx, "file://"+dir)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	// Exactly one writer creates a commit object; the second one loses.
	const key = "steps/00000000000000001200/MANIFEST.json"
	create := &blob.WriterOptions{IfNotExist: true, ContentType: "application/json"}
	err = b.WriteAll(ctx, key, []byte(`{"step":1200}`), create)
	fmt.Println("first:", err)
	err = storage.Wrap("create", key, b.WriteAll(ctx, key, []byte(`{"step":1200,"late":true}`), create))
	fmt.Println("second lost:", errors.Is(err, storage.ErrExists))

	data, _ := b.ReadAll(ctx, key)
	fmt.Println(string(data))
	// Output:
	// first: <nil>
	// second lost: true
	// {"step":1200}
}

func ExampleRetry() {
	ctx := context.Background()
	calls := 0
	err := storage.Retry(ctx, nil, func(ctx context.Context) error {
		calls++
		return os.ErrNotExist // not transient: no retry
	})
	fmt.Println(calls, storage.IsNotFound(err))
	// Output: 1 true
}

func ExampleWrap() {
	err := storage.Wrap("read", "steps/00000000000000001200/MANIFEST.json", os.ErrNotExist)
	fmt.Println(err)
	fmt.Println(errors.Is(err, storage.ErrNotFound), errors.Is(err, os.ErrNotExist))
	// Output:
	// storage: read "steps/00000000000000001200/MANIFEST.json": file does not exist
	// true true
}
