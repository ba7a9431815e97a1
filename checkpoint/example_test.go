package checkpoint_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/spotcheck/spotcheck/checkpoint"
	"github.com/spotcheck/spotcheck/storage"
)

func Example() {
	ctx := context.Background()
	bucket, err := storage.Open(ctx, "mem://")
	if err != nil {
		log.Fatal(err)
	}
	defer bucket.Close()
	store, err := checkpoint.New(bucket, &checkpoint.Options{Retention: checkpoint.KeepLast(2)})
	if err != nil {
		log.Fatal(err)
	}
	for step := int64(100); step <= 400; step += 100 {
		model := []byte(fmt.Sprintf("weights@%d", step))
		_, err := store.Save(ctx, step, checkpoint.Meta{Epoch: step / 100, Metrics: map[string]float64{"loss": 1 / float64(step)}},
			map[string]io.WriterTo{"model": bytes.NewReader(model)})
		if err != nil {
			log.Fatal(err)
		}
	}
	ck, err := store.Latest(ctx)
	if err != nil {
		log.Fatal(err)
	}
	model, err := ck.ReadAll(ctx, "model") // verified against the manifest's sha256
	if err != nil {
		log.Fatal(err)
	}
	infos, _ := store.List(ctx)
	fmt.Printf("resume at step %d (epoch %d): %s\n", ck.Step, ck.Epoch, model)
	for _, i := range infos {
		fmt.Println("kept", i.Step)
	}
	// Output:
	// resume at step 400 (epoch 4): weights@400
	// kept 300
	// kept 400
}

func ExampleStore_Begin() {
	ctx := context.Background()
	bucket, _ := storage.Open(ctx, "mem://")
	defer bucket.Close()
	store, _ := checkpoint.New(bucket, nil)

	w, err := store.Begin(ctx, 7)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Abort(ctx) // no-op after a successful Commit
	for _, name := range []string{"model", "optimizer"} {
		pw, err := w.Create(ctx, name)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(pw, "%s state", name)
		if err := pw.Close(); err != nil {
			log.Fatal(err)
		}
	}
	info, err := w.Commit(ctx, checkpoint.Meta{Labels: map[string]string{"run": "demo"}})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range info.Parts {
		fmt.Println(p.Name, p.Size, p.SHA256[:12])
	}
	// Output:
	// model 11 e55aa0cf4211
	// optimizer 15 04135297e34a
}

func ExampleAsync() {
	ctx := context.Background()
	bucket, _ := storage.Open(ctx, "mem://")
	defer bucket.Close()
	store, _ := checkpoint.New(bucket, nil)
	saver := checkpoint.NewAsync(store, nil)

	weights := make([]byte, 1<<20)
	for step := int64(1); step <= 3; step++ {
		weights[0] = byte(step) // "training"
		// Copies weights and returns; the upload runs in the background.
		if err := saver.Save(ctx, step, checkpoint.Meta{}, map[string][]byte{"model": weights}); err != nil {
			log.Fatal(err)
		}
	}
	if err := saver.Close(); err != nil { // waits for the last save
		log.Fatal(err)
	}
	ck, _ := store.Latest(ctx)
	model, _ := ck.ReadAll(ctx, "model")
	fmt.Println(ck.Step, model[0])
	// Output: 3 3
}

func ExampleStore_Fits() {
	ctx := context.Background()
	bucket, _ := storage.Open(ctx, "mem://")
	defer bucket.Close()
	store, _ := checkpoint.New(bucket, nil)
	store.RecordSave(200e6, 2*time.Second) // e.g. measured by an earlier save: 100 MB/s

	now := time.Now()
	deadline := now.Add(2 * time.Minute) // e.g. an interruption notice's deadline
	fmt.Println(store.EstimateSave(1e9), store.Fits(1e9, now, deadline), store.Fits(50e9, now, deadline))
	// Output: 10s true false
}

func ExampleNewSchedule() {
	sched := checkpoint.NewSchedule(&checkpoint.ScheduleOptions{MTBF: 6 * time.Hour, Min: time.Minute, Max: time.Hour})
	sched.Record(20 * time.Second) // a save took 20s
	fmt.Println(sched.Interval().Round(time.Second))
	// Output: 15m30s
}

func ExampleWriteTensors() {
	var buf bytes.Buffer
	_, err := checkpoint.WriteTensors(&buf, []checkpoint.Tensor{
		{Name: "w", Shape: []int{2, 2}, F32: []float32{1, 2, 3, 4}},
	}, map[string]string{"format": "pt"})
	if err != nil {
		log.Fatal(err)
	}
	ts, md, _ := checkpoint.ReadTensors(&buf)
	fmt.Println(ts[0].Name, ts[0].Shape, ts[0].F32, md["format"])
	// Output: w [2 2] [1 2 3 4] pt
}
