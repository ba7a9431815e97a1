package k8s_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The trainer's process contract (examples/trainer).
const (
	trainerContainer = "trainer"
	// trainerImage is the image every manifest runs.
	trainerImage = "ghcr.io/spotcheck/trainer:v0.1.0"
)

// trainerContract is what the manifests must agree with: the trainer's
// flags and exit codes. It is read from examples/trainer's source when it is
// there, so that a renamed flag or a new exit code fails this test.
type trainerContract struct {
	from  string
	flags map[string]bool
	// reschedule is the "state saved, run me again" exit code (EX_TEMPFAIL).
	reschedule int32
	// nonRetriable are the codes for which running again cannot help.
	nonRetriable []int32
}

// documentedContract is examples/trainer as of branch trainer 8b7c68f (its
// parseFlags and exit constants), used when the trainer's source is absent.
var documentedContract = trainerContract{
	from: "examples/trainer@8b7c68f (no source in this tree)",
	flags: setOf("store", "steps", "seed", "batch", "lr", "every", "mtbf", "keep", "interrupt-at",
		"async", "plot", "detect", "grace", "margin", "progress", "log-every"),
	reschedule:   75,
	nonRetriable: []int32{1, 2},
}

func setOf(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// platform describes what a spot node of one platform looks like.
type platform struct {
	name   string
	label  string // node label that selects spot capacity
	value  string
	taint  corev1.Taint // the taint the manifest must tolerate
	notice time.Duration
}

var platforms = []platform{
	{"karpenter", "karpenter.sh/capacity-type", "spot",
		corev1.Taint{Key: "spot", Value: "true", Effect: corev1.TaintEffectNoSchedule}, 2 * time.Minute},
	{"eks-managed", "eks.amazonaws.com/capacityType", "SPOT",
		corev1.Taint{Key: "spot", Value: "true", Effect: corev1.TaintEffectNoSchedule}, 2 * time.Minute},
	{"gke", "cloud.google.com/gke-spot", "true",
		corev1.Taint{Key: "cloud.google.com/gke-spot", Value: "true", Effect: corev1.TaintEffectNoSchedule}, 30 * time.Second},
}

// gpuTaint is the taint GPU nodes carry on every platform.
var gpuTaint = corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}

// manifest is one decoded file.
type manifest struct {
	file            string
	jobs            []*batchv1.Job
	serviceAccounts []*corev1.ServiceAccount
	claims          []*corev1.PersistentVolumeClaim
	storageClasses  []*storagev1.StorageClass
}

// splitDocuments splits a multi-document YAML stream, dropping documents
// that hold only comments or whitespace.
func splitDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		empty := true
		for _, line := range strings.Split(string(doc), "\n") {
			if l := strings.TrimSpace(line); l != "" && l != "---" && !strings.HasPrefix(l, "#") {
				empty = false
				break
			}
		}
		if !empty {
			docs = append(docs, doc)
		}
	}
}

// decode decodes every document of data strictly into its k8s.io/api type.
func decode(file string, data []byte) (*manifest, error) {
	docs, err := splitDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	m := &manifest{file: file}
	for i, doc := range docs {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "batch/v1 Job":
			j := new(batchv1.Job)
			m.jobs, obj = append(m.jobs, j), j
		case "v1 ServiceAccount":
			sa := new(corev1.ServiceAccount)
			m.serviceAccounts, obj = append(m.serviceAccounts, sa), sa
		case "v1 PersistentVolumeClaim":
			c := new(corev1.PersistentVolumeClaim)
			m.claims, obj = append(m.claims, c), c
		case "storage.k8s.io/v1 StorageClass":
			sc := new(storagev1.StorageClass)
			m.storageClasses, obj = append(m.storageClasses, sc), sc
		default:
			return nil, fmt.Errorf("%s: document %d: unexpected apiVersion %q kind %q", file, i, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("%s: document %d (%s): %w", file, i, tm.Kind, err)
		}
	}
	return m, nil
}

func loadManifests(t *testing.T) []*manifest {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < len(platforms) {
		t.Fatalf("found %d manifests %v, want at least one per platform (%d)", len(files), files, len(platforms))
	}
	var ms []*manifest
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := decode(f, data)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	return ms
}

// readContract reads the trainer's flags (flag.String("name", ...),
// fs.DurationVar(&v, "name", ...), ...) and exit codes (constants named
// exit*: exitInterrupted is the reschedule code, every other one but exitOK
// is non-retriable) from examples/trainer's source with go/parser.
func readContract(t *testing.T) trainerContract {
	t.Helper()
	files, _ := filepath.Glob("../trainer/*.go")
	fset := token.NewFileSet()
	flags := map[string]bool{}
	exits := map[string]int32{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatalf("parse trainer source: %v", err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if !strings.HasPrefix(name.Name, "exit") || i >= len(n.Values) {
						continue
					}
					if lit, ok := n.Values[i].(*ast.BasicLit); ok && lit.Kind == token.INT {
						if v, err := strconv.ParseInt(lit.Value, 0, 32); err == nil {
							exits[name.Name] = int32(v)
						}
					}
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || !isFlagFunc(sel.Sel.Name) {
					return true
				}
				idx := 0
				if strings.HasSuffix(sel.Sel.Name, "Var") {
					idx = 1
				}
				if idx < len(n.Args) {
					if lit, ok := n.Args[idx].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if name, err := strconv.Unquote(lit.Value); err == nil {
							flags[name] = true
						}
					}
				}
			}
			return true
		})
	}
	if len(flags) == 0 {
		return documentedContract
	}
	c := trainerContract{from: "examples/trainer source", flags: flags}
	resched, ok := exits["exitInterrupted"]
	if !ok {
		t.Fatalf("examples/trainer defines no exitInterrupted constant (exit constants: %v)", exits)
	}
	c.reschedule = resched
	for name, v := range exits {
		if name != "exitOK" && name != "exitInterrupted" && v != 0 {
			c.nonRetriable = append(c.nonRetriable, v)
		}
	}
	slices.Sort(c.nonRetriable)
	return c
}

func isFlagFunc(name string) bool {
	switch strings.TrimSuffix(name, "Var") {
	case "String", "Int", "Int64", "Uint", "Uint64", "Bool", "Float64", "Duration", "Func", "BoolFunc", "Text", "":
		return name != ""
	}
	return false
}

// tolerates reports whether tols let a pod onto a node with taint, with the
// scheduler's matching rules.
func tolerates(tols []corev1.Toleration, taint corev1.Taint) bool {
	for _, tol := range tols {
		if tol.Effect != "" && tol.Effect != taint.Effect {
			continue
		}
		switch tol.Operator {
		case corev1.TolerationOpExists:
			if tol.Key == "" || tol.Key == taint.Key {
				return true
			}
		case corev1.TolerationOpEqual, "":
			if tol.Key == taint.Key && tol.Value == taint.Value {
				return true
			}
		}
	}
	return false
}

// selects reports whether the pod requires nodes labelled key=value, through
// its nodeSelector or a required node affinity term.
func selects(spec *corev1.PodSpec, key, value string) bool {
	if spec.NodeSelector[key] == value {
		return true
	}
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil || spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		return false
	}
	for _, term := range terms { // terms are ORed: every one must require it
		found := false
		for _, e := range term.MatchExpressions {
			if e.Key == key && e.Operator == corev1.NodeSelectorOpIn && slices.Equal(e.Values, []string{value}) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// parseArgs parses "-name=value" arguments.
func parseArgs(args []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range args {
		name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || !ok || name == "" {
			return nil, fmt.Errorf("argument %q: want -name=value", a)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("flag -%s given twice", name)
		}
		out[name] = value
	}
	return out, nil
}

// checkJob returns every invariant job (from m) breaks.
func checkJob(m *manifest, job *batchv1.Job, tc trainerContract) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	spec := &job.Spec.Template.Spec

	c := findContainer(spec, trainerContainer)
	var args map[string]string
	if c != nil {
		var err error
		if args, err = parseArgs(c.Args); err != nil {
			bad("args: %v", err)
		}
	}

	// Platform: exactly one spot platform selected, and its taints tolerated.
	var plat *platform
	for i := range platforms {
		if selects(spec, platforms[i].label, platforms[i].value) {
			if plat != nil {
				bad("selects both %s and %s spot nodes", plat.name, platforms[i].name)
			}
			plat = &platforms[i]
		}
	}
	if plat == nil {
		bad("selects no spot capacity label (%v)", spec.NodeSelector)
	} else {
		if !tolerates(spec.Tolerations, plat.taint) {
			bad("does not tolerate the %s spot taint %s=%s:%s", plat.name, plat.taint.Key, plat.taint.Value, plat.taint.Effect)
		}
		// Grace: the notice > the pod's grace period >= the trainer's -grace
		// > its -margin (the emergency save must end that long before).
		checkGrace(spec, plat, args, bad)
	}
	if !tolerates(spec.Tolerations, gpuTaint) {
		bad("does not tolerate the GPU taint %s", gpuTaint.Key)
	}

	// Restart and failure policy.
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		bad("restartPolicy %q, podFailurePolicy requires Never", spec.RestartPolicy)
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit < 1 {
		bad("backoffLimit %v: want an explicit limit >= 1", job.Spec.BackoffLimit)
	}
	if job.Spec.ActiveDeadlineSeconds == nil {
		bad("no activeDeadlineSeconds: ignored failures could reschedule forever")
	}
	if p := job.Spec.PodReplacementPolicy; p == nil || *p != batchv1.Failed {
		bad("podReplacementPolicy %v, want Failed (no overlapping trainers; the only value the API allows with podFailurePolicy)", p)
	}
	pfp := job.Spec.PodFailurePolicy
	if pfp == nil || len(pfp.Rules) == 0 {
		bad("no podFailurePolicy")
		pfp = &batchv1.PodFailurePolicy{}
	}
	containers := map[string]*corev1.Container{}
	for i := range spec.Containers {
		containers[spec.Containers[i].Name] = &spec.Containers[i]
	}
	disruptionIgnored, rescheduleIgnored := -1, -1
	failJob := map[int32]bool{}
	for i, r := range pfp.Rules {
		if (r.OnExitCodes == nil) == (len(r.OnPodConditions) == 0) {
			bad("podFailurePolicy rule %d: want exactly one of onExitCodes and onPodConditions", i)
			continue
		}
		if ec := r.OnExitCodes; ec != nil {
			if ec.ContainerName == nil || containers[*ec.ContainerName] == nil {
				bad("podFailurePolicy rule %d: containerName %v names no container", i, ec.ContainerName)
			}
			// The API server's validation: 1..255 values, unique, ascending.
			if n := len(ec.Values); n == 0 || n > 255 || !slices.IsSorted(ec.Values) || len(slices.Compact(slices.Clone(ec.Values))) != n {
				bad("podFailurePolicy rule %d: exit codes %v must be 1..255 unique values in ascending order", i, ec.Values)
			}
			if ec.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn {
				bad("podFailurePolicy rule %d: operator %q, want In", i, ec.Operator)
				continue
			}
			for _, code := range ec.Values {
				switch {
				case code == 0:
					bad("podFailurePolicy rule %d: exit code 0 is not allowed", i)
				case code == tc.reschedule && r.Action == batchv1.PodFailurePolicyActionIgnore && rescheduleIgnored < 0:
					rescheduleIgnored = i
				case code == tc.reschedule:
					bad("podFailurePolicy rule %d: the reschedule exit code %d must be ignored, not %s", i, code, r.Action)
				case r.Action == batchv1.PodFailurePolicyActionFailJob:
					failJob[code] = true
				}
			}
		}
		for _, c := range r.OnPodConditions {
			if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && r.Action == batchv1.PodFailurePolicyActionIgnore && disruptionIgnored < 0 {
				disruptionIgnored = i
			}
		}
	}
	if disruptionIgnored != 0 {
		bad("podFailurePolicy: the first rule must Ignore DisruptionTarget=True (found at %d)", disruptionIgnored)
	}
	if rescheduleIgnored < 0 {
		bad("podFailurePolicy: no rule Ignores the trainer's reschedule exit code %d", tc.reschedule)
	}
	for _, code := range tc.nonRetriable {
		if !failJob[code] {
			bad("podFailurePolicy: non-retriable exit code %d does not FailJob", code)
		}
	}

	// The trainer container.
	if c == nil {
		bad("no container named %q", trainerContainer)
		return errs
	}
	if len(spec.Containers) != 1 {
		bad("%d containers, want only the trainer", len(spec.Containers))
	}
	if c.Image != trainerImage {
		bad("image %q, want %q", c.Image, trainerImage)
	}
	if len(c.Command) != 0 {
		bad("command %q overrides the image's entrypoint (the trainer)", c.Command)
	}
	if _, ok := c.Resources.Limits["nvidia.com/gpu"]; !ok {
		bad("no nvidia.com/gpu limit")
	}
	for name := range args {
		if !tc.flags[name] {
			bad("args: -%s is not a trainer flag", name)
		}
	}
	if _, ok := args["interrupt-at"]; ok {
		bad("args: -interrupt-at is for demos and tests, not for a real job")
	}
	store, ok := args["store"]
	if !ok {
		bad("args: no -store (the default is a directory inside the container, lost with the pod)")
		return errs
	}
	u, err := url.Parse(store)
	if err != nil {
		bad("args: -store %q: %v", store, err)
		return errs
	}
	switch u.Scheme {
	case "s3":
		checkIRSA(m, spec, u, bad)
	case "file":
		checkPVC(m, spec, c, u, bad)
	default:
		bad("args: -store %q: want s3:// (IRSA) or file:// on a PersistentVolumeClaim", store)
	}
	return errs
}

func findContainer(spec *corev1.PodSpec, name string) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	return nil
}

// durationArg parses the duration flag name of args; def if absent.
func durationArg(args map[string]string, name string, def time.Duration, bad func(string, ...any)) time.Duration {
	v, ok := args[name]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		bad("args: -%s=%s: %v", name, v, err)
		return def
	}
	return d
}

func checkGrace(spec *corev1.PodSpec, plat *platform, args map[string]string, bad func(string, ...any)) {
	if spec.TerminationGracePeriodSeconds == nil {
		bad("terminationGracePeriodSeconds not set (default 30 s is not sized to the notice)")
		return
	}
	podGrace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	if podGrace >= plat.notice {
		bad("terminationGracePeriodSeconds %v >= the %s notice %v: the node is gone before the kubelet's SIGKILL", podGrace, plat.name, plat.notice)
	}
	if _, ok := args["grace"]; !ok {
		bad("args: no -grace: the trainer would assume its default, not the pod's %v", podGrace)
	}
	if _, ok := args["margin"]; !ok {
		bad("args: no -margin")
	}
	// The trainer's defaults (examples/trainer): -grace 30s, -margin 2s.
	grace := durationArg(args, "grace", 30*time.Second, bad)
	margin := durationArg(args, "margin", 2*time.Second, bad)
	if grace > podGrace {
		bad("-grace=%v is longer than terminationGracePeriodSeconds %v: the emergency save would be killed", grace, podGrace)
	}
	if margin <= 0 || margin >= grace {
		bad("-margin=%v leaves no time for the emergency save within -grace=%v", margin, grace)
	}
	if podGrace <= margin {
		bad("terminationGracePeriodSeconds %v <= the trainer's emergency-save margin %v", podGrace, margin)
	}
}

func checkIRSA(m *manifest, spec *corev1.PodSpec, u *url.URL, bad func(string, ...any)) {
	if u.Host == "" {
		bad("-store %q names no bucket", u)
	}
	if spec.ServiceAccountName == "" {
		bad("S3 store without a serviceAccountName: no IRSA credentials")
		return
	}
	for _, sa := range m.serviceAccounts {
		if sa.Name == spec.ServiceAccountName {
			if !strings.HasPrefix(sa.Annotations["eks.amazonaws.com/role-arn"], "arn:aws:iam::") {
				bad("ServiceAccount %s: annotation eks.amazonaws.com/role-arn = %q, want an IAM role ARN", sa.Name, sa.Annotations["eks.amazonaws.com/role-arn"])
			}
			return
		}
	}
	bad("ServiceAccount %q is not defined in %s", spec.ServiceAccountName, m.file)
}

func checkPVC(m *manifest, spec *corev1.PodSpec, c *corev1.Container, u *url.URL, bad func(string, ...any)) {
	dir := path.Clean(u.Path)
	for _, vm := range c.VolumeMounts {
		if dir != vm.MountPath && !strings.HasPrefix(dir, strings.TrimSuffix(vm.MountPath, "/")+"/") {
			continue
		}
		if vm.ReadOnly {
			bad("volume %s mounted read-only at %s", vm.Name, vm.MountPath)
		}
		for _, v := range spec.Volumes {
			if v.Name != vm.Name {
				continue
			}
			if v.PersistentVolumeClaim == nil {
				bad("-store %s is on volume %s, which is not a PersistentVolumeClaim", dir, v.Name)
				return
			}
			for _, pvc := range m.claims {
				if pvc.Name == v.PersistentVolumeClaim.ClaimName {
					if sc := pvc.Spec.StorageClassName; sc != nil {
						for _, s := range m.storageClasses {
							if s.Name == *sc && (s.ReclaimPolicy == nil || *s.ReclaimPolicy != corev1.PersistentVolumeReclaimRetain) {
								bad("StorageClass %s: reclaimPolicy %v, want Retain (checkpoints outlive the claim)", s.Name, s.ReclaimPolicy)
							}
						}
					}
					return
				}
			}
			bad("PersistentVolumeClaim %q is not defined in %s", v.PersistentVolumeClaim.ClaimName, m.file)
			return
		}
		bad("volumeMount %s names no volume", vm.Name)
		return
	}
	bad("-store %s is on no mounted volume: checkpoints would die with the pod", dir)
}

func TestManifests(t *testing.T) {
	tc := readContract(t)
	t.Logf("trainer contract from %s: %d flags, reschedule %d, non-retriable %v", tc.from, len(tc.flags), tc.reschedule, tc.nonRetriable)
	seen := map[string]bool{}
	for _, m := range loadManifests(t) {
		t.Run(m.file, func(t *testing.T) {
			if len(m.jobs) != 1 {
				t.Fatalf("%d Jobs, want 1", len(m.jobs))
			}
			for _, err := range checkJob(m, m.jobs[0], tc) {
				t.Error(err)
			}
			for _, p := range platforms {
				if selects(&m.jobs[0].Spec.Template.Spec, p.label, p.value) {
					seen[p.name] = true
				}
			}
		})
	}
	for _, p := range platforms {
		if !seen[p.name] {
			t.Errorf("no manifest for %s", p.name)
		}
	}
}

// TestChecksCanFail breaks each invariant on a copy of a good manifest and
// expects checkJob to name it.
func TestChecksCanFail(t *testing.T) {
	tc := readContract(t)
	var base *manifest
	for _, m := range loadManifests(t) {
		if m.file == "eks-karpenter-s3.yaml" {
			base = m
		}
	}
	if base == nil {
		t.Fatal("eks-karpenter-s3.yaml not found")
	}
	if errs := checkJob(base, base.jobs[0], tc); len(errs) != 0 {
		t.Fatalf("base manifest breaks invariants: %v", errs)
	}
	tests := []struct {
		name   string
		mutate func(j *batchv1.Job, m *manifest)
		want   string
	}{
		{"no tolerations", func(j *batchv1.Job, _ *manifest) { j.Spec.Template.Spec.Tolerations = nil }, "does not tolerate the karpenter spot taint"},
		{"restart OnFailure", func(j *batchv1.Job, _ *manifest) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure }, "restartPolicy"},
		{"no disruption rule", func(j *batchv1.Job, _ *manifest) {
			j.Spec.PodFailurePolicy.Rules = j.Spec.PodFailurePolicy.Rules[1:]
		}, "Ignore DisruptionTarget"},
		{"grace below margin", func(j *batchv1.Job, _ *manifest) { j.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr(int64(5)) }, "emergency-save margin"},
		{"trainer grace above pod grace", func(j *batchv1.Job, _ *manifest) {
			j.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr(int64(60))
		}, "longer than terminationGracePeriodSeconds"},
		{"no -grace", func(j *batchv1.Job, _ *manifest) {
			c := &j.Spec.Template.Spec.Containers[0]
			c.Args = slices.DeleteFunc(slices.Clone(c.Args), func(a string) bool { return strings.HasPrefix(a, "-grace=") })
		}, "no -grace"},
		{"margin above grace", func(j *batchv1.Job, _ *manifest) {
			c := &j.Spec.Template.Spec.Containers[0]
			c.Args = append(slices.DeleteFunc(slices.Clone(c.Args), func(a string) bool { return strings.HasPrefix(a, "-margin=") }), "-margin=2m")
		}, "leaves no time"},
		{"grace beyond notice", func(j *batchv1.Job, _ *manifest) {
			j.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr(int64(300))
		}, "notice"},
		{"unknown flag", func(j *batchv1.Job, _ *manifest) {
			c := &j.Spec.Template.Spec.Containers[0]
			c.Args = append(slices.Clone(c.Args), "-checkpoint-dir=/tmp")
		}, "not a trainer flag"},
		{"other image", func(j *batchv1.Job, _ *manifest) { j.Spec.Template.Spec.Containers[0].Image = "trainer:latest" }, "image"},
		{"no service account", func(j *batchv1.Job, m *manifest) { m.serviceAccounts = nil }, "not defined"},
		{"reschedule counted", func(j *batchv1.Job, _ *manifest) {
			j.Spec.PodFailurePolicy.Rules[1].Action = batchv1.PodFailurePolicyActionCount
		}, "reschedule exit code 75"},
		{"unsorted exit codes", func(j *batchv1.Job, _ *manifest) {
			j.Spec.PodFailurePolicy.Rules[2].OnExitCodes.Values = []int32{2, 1}
		}, "ascending order"},
		{"store on ephemeral disk", func(j *batchv1.Job, _ *manifest) {
			j.Spec.Template.Spec.Containers[0].Args = []string{"-store=file:///tmp/ck"}
		}, "on no mounted volume"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := base.jobs[0].DeepCopy()
			m := *base
			tt.mutate(j, &m)
			errs := checkJob(&m, j, tc)
			if !slices.ContainsFunc(errs, func(e error) bool { return strings.Contains(e.Error(), tt.want) }) {
				t.Errorf("checkJob = %v, want an error containing %q", errs, tt.want)
			}
		})
	}
}

func TestDecodeIsStrict(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"misspelled field", "apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      toleration: []\n", "unknown field"},
		{"duplicate key", "apiVersion: batch/v1\nkind: Job\nspec:\n  backoffLimit: 1\n  backoffLimit: 2\n", "already set"},
		{"unknown kind", "apiVersion: apps/v1\nkind: Deployment\n", "unexpected apiVersion"},
		{"bad second document", "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ServiceAccount\nmetadat:\n  name: b\n", "document 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decode("test.yaml", []byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("decode = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestSplitDocuments(t *testing.T) {
	in := "# header only\n---\na: 1\n---\n# comment\n---\nb: 2\nc: |\n  text\n  --- not a separator\n"
	docs, err := splitDocuments([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 {
		t.Fatalf("got %d documents %q, want 2", len(docs), docs)
	}
	var v map[string]any
	if err := yaml.UnmarshalStrict(docs[1], &v); err != nil {
		t.Fatal(err)
	}
	if v["c"] != "text\n--- not a separator\n" {
		t.Errorf("block scalar = %q", v["c"])
	}
}

func ptr[T any](v T) *T { return &v }

// FuzzDecode: any input either decodes or fails with an error naming the
// file; never a panic, never a document silently lost.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("*.yaml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("apiVersion: v1\nkind: ServiceAccount\n---\napiVersion: batch/v1\nkind: Job\nspec: {}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decode("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		docs, err := splitDocuments(data)
		if err != nil {
			t.Fatalf("decode succeeded but split fails: %v", err)
		}
		if n := len(m.jobs) + len(m.serviceAccounts) + len(m.claims) + len(m.storageClasses); n != len(docs) {
			t.Fatalf("%d documents, %d objects", len(docs), n)
		}
	})
}
