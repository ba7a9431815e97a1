package interrupt

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseInstanceAction(t *testing.T) {
	tm := time.Date(2017, 9, 18, 8, 22, 0, 0, time.UTC)
	for _, tc := range []struct {
		body    string
		kind    Kind
		wantErr string
	}{
		{`{"action": "terminate", "time": "2017-09-18T08:22:00Z"}`, KindTerminate, ""},
		{"{\n\t\"action\": \"stop\",\n\t\"time\": \"2017-09-18T08:22:00Z\"\n}", KindStop, ""},
		{`{"action":"hibernate","time":"2017-09-18T08:22:00Z"}`, KindHibernate, ""},
		{`{"action": "reboot", "time": "2017-09-18T08:22:00Z"}`, "", `unknown action "reboot"`},
		{`{"action": "terminate", "time": "soon"}`, "", `time "soon"`},
		{`{"action": "terminate"}`, "", `time ""`},
		{`{"action": "terminate", "time": "2017-09-18T08:22:00Z"} trailing`, "", "trailing data"},
		{`{"action": "termin`, "", "malformed JSON"},
		{`<html>404</html>`, "", "malformed JSON"},
		{`null`, "", "unknown action"},
		{``, "", "malformed JSON"},
	} {
		k, got, err := parseInstanceAction([]byte(tc.body))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseInstanceAction(%q) error = %v, want it to contain %q", tc.body, err, tc.wantErr)
			}
			continue
		}
		if err != nil || k != tc.kind || !got.Equal(tm) {
			t.Errorf("parseInstanceAction(%q) = %v, %v, %v; want %v, %v", tc.body, k, got, err, tc.kind, tm)
		}
	}
}

func TestParseRebalance(t *testing.T) {
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{`{"noticeTime": "2020-10-27T08:22:00Z"}`, true},
		{"{\n\t\"noticeTime\": \"2026-12-02T10:28:18Z\"\n}", true},
		{`{"noticeTime": 7}`, false},
		{`{}`, false},
		{`[]`, false},
	} {
		_, err := parseRebalance([]byte(tc.body))
		if (err == nil) != tc.ok {
			t.Errorf("parseRebalance(%q) error = %v, want ok=%v", tc.body, err, tc.ok)
		}
	}
}

func TestParseScheduled(t *testing.T) {
	body := `[
	{
		"Code": "system-reboot",
		"Description": "scheduled reboot",
		"EventId": "instance-event-0d59937288b749b32",
		"NotAfter": "2 Feb 2019 16:00:00 GMT",
		"NotBefore": "2 Feb 2019 14:00:00 GMT",
		"State": "active"
	},
	{
		"Code": "instance-stop",
		"Description": "[Canceled] scheduled stop",
		"EventId": "instance-event-1",
		"NotBefore": "21 Jan 2019 09:00:43 GMT",
		"State": "canceled"
	},
	{
		"Code": "instance-retirement",
		"Description": "[Completed] retirement",
		"EventId": "instance-event-2",
		"NotBefore": "21 Jan 2019 09:00:43 GMT",
		"State": "completed"
	}
]`
	evs, err := parseScheduled([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.EventID+" "+e.NotBefore.Format(time.RFC3339)+" "+map[bool]string{true: "active", false: "inactive"}[e.active()])
	}
	want := []string{
		"instance-event-0d59937288b749b32 2019-02-02T14:00:00Z active",
		"instance-event-1 2019-01-21T09:00:43Z inactive",
		"instance-event-2 2019-01-21T09:00:43Z inactive",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	ns, err := scheduledNotices([]byte(body), t0)
	if err != nil || len(ns) != 1 || ns[0].ID != "instance-event-0d59937288b749b32" {
		t.Errorf("scheduledNotices = %v, %v; want the one active event", ns, err)
	}
	for _, bad := range []string{
		`[{"Code": "system-reboot", "EventId": "e", "NotBefore": "next week"}]`,
		`[{"Code": "system-reboot", "NotBefore": "2 Feb 2019 14:00:00 GMT"}]`,
		`[{"EventId": "e", "NotBefore": "2 Feb 2019 14:00:00 GMT"}]`,
		`{"Code": "system-reboot"}`,
		`[{]`,
	} {
		if _, err := parseScheduled([]byte(bad)); err == nil {
			t.Errorf("parseScheduled(%q) succeeded", bad)
		}
	}
}

func TestParseGCPValue(t *testing.T) {
	type res struct {
		Kind          Kind
		Final, Active bool
		Err           bool
	}
	for _, tc := range []struct {
		path, val string
		want      res
	}{
		{gcpPathPreempted, "TRUE", res{KindTerminate, true, true, false}},
		{gcpPathPreempted, "FALSE", res{}},
		{gcpPathPreempted, "TRUE\n", res{KindTerminate, true, true, false}},
		{gcpPathPreempted, "yes", res{Err: true}},
		{gcpPathMaintenance, "NONE", res{}},
		{gcpPathMaintenance, "MIGRATE_ON_HOST_MAINTENANCE", res{KindMaintenance, false, true, false}},
		{gcpPathMaintenance, "TERMINATE_ON_HOST_MAINTENANCE", res{KindMaintenance, true, true, false}},
		{gcpPathMaintenance, "<html>", res{Err: true}},
		{"instance/other", "TRUE", res{Err: true}},
	} {
		k, f, a, err := parseGCPValue(tc.path, tc.val)
		if diff := cmp.Diff(tc.want, res{k, f, a, err != nil}); diff != "" {
			t.Errorf("parseGCPValue(%q, %q) (-want +got):\n%s", tc.path, tc.val, diff)
		}
	}
}

func TestParseAzureDocument(t *testing.T) {
	// The example document of the Azure Scheduled Events documentation.
	body := `{
    "DocumentIncarnation": 3,
    "Events": [
        {
            "EventId": "C7061BAC-AFDC-4513-B24B-AA5F13A16123",
            "EventStatus": "Scheduled",
            "EventType": "Freeze",
            "ResourceType": "VirtualMachine",
            "Resources": ["WestNO_0", "WestNO_1"],
            "NotBefore": "Mon, 11 Apr 2022 22:26:58 GMT",
            "Description": "Virtual machine is being paused because of a memory-preserving Live Migration operation.",
            "EventSource": "Platform",
            "DurationInSeconds": 5
        }
    ]
}`
	doc, err := parseAzureDocument([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := azureDocument{Incarnation: 3, Events: []azureEvent{{
		EventID: "C7061BAC-AFDC-4513-B24B-AA5F13A16123", EventType: "Freeze", Resources: []string{"WestNO_0", "WestNO_1"},
		EventStatus: "Scheduled", NotBefore: time.Date(2022, 4, 11, 22, 26, 58, 0, time.UTC),
	}}}
	if diff := cmp.Diff(want, doc, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
		cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Raw" }, cmp.Ignore())); diff != "" {
		t.Errorf("document (-want +got):\n%s", diff)
	}
	if _, err := parseAzureDocument([]byte(`{"DocumentIncarnation": 0, "Events": []}`)); err != nil {
		t.Errorf("empty document: %v", err)
	}
	for _, bad := range []string{`{"Events": []}`, `{"DocumentIncarnation": "x"}`, `{"DocumentIncarnation": 1, "Events": [{"EventType": "Preempt"}]}`,
		`{"DocumentIncarnation": 1, "Events": [{"EventId": "e"}]}`, `{"DocumentIncarnation": 1, "Events": [{"EventId": "e", "EventType": "Preempt", "NotBefore": "soon"}]}`} {
		if _, err := parseAzureDocument([]byte(bad)); err == nil {
			t.Errorf("parseAzureDocument(%q) succeeded", bad)
		}
	}
}

func FuzzParseInstanceAction(f *testing.F) {
	f.Add([]byte(`{"action": "terminate", "time": "2017-09-18T08:22:00Z"}`))
	f.Add([]byte(`{"action": "stop", "time": "2017-09-18T08:22:00+02:00"}`))
	f.Add([]byte(`{"action": "hibernate", "time": ""}`))
	f.Add([]byte(`<html>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		k, tm, err := parseInstanceAction(body)
		if err != nil {
			return
		}
		if k != KindTerminate && k != KindStop && k != KindHibernate {
			t.Fatalf("kind %q from %q", k, body)
		}
		// What parsed must parse again, the same, after re-encoding.
		re, _ := json.Marshal(instanceAction{Action: string(k), Time: tm.Format(time.RFC3339Nano)})
		k2, tm2, err := parseInstanceAction(re)
		if err != nil || k2 != k || !tm2.Equal(tm) {
			t.Fatalf("re-encoded %s: %v %v %v, want %v %v", re, k2, tm2, err, k, tm)
		}
		ns, err := instanceActionNotices(body, t0)
		if err != nil || len(ns) != 1 || ns[0].Advisory || ns[0].Kind != k {
			t.Fatalf("instanceActionNotices(%q) = %v, %v", body, ns, err)
		}
	})
}

func FuzzParseRebalance(f *testing.F) {
	f.Add([]byte(`{"noticeTime": "2020-10-27T08:22:00Z"}`))
	f.Add([]byte(`{"noticeTime": 1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		tm, err := parseRebalance(body)
		if err != nil {
			return
		}
		if tm.IsZero() && !strings.Contains(string(body), "0001") {
			t.Fatalf("zero time from %q", body)
		}
		ns, err := rebalanceNotices(body, t0)
		if err != nil || len(ns) != 1 || !ns[0].Advisory || ns[0].Kind != KindRebalance {
			t.Fatalf("rebalanceNotices(%q) = %v, %v", body, ns, err)
		}
	})
}

func FuzzParseScheduled(f *testing.F) {
	f.Add([]byte(`[{"Code": "system-reboot", "Description": "d", "EventId": "instance-event-1", "NotBefore": "2 Feb 2019 14:00:00 GMT", "NotAfter": "2 Feb 2019 16:00:00 GMT", "State": "active"}]`))
	f.Add([]byte(`[{"Code": "instance-stop", "EventId": "e", "NotBefore": "21 Jan 2019 09:00:43 GMT", "State": "canceled"}]`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		evs, err := parseScheduled(body)
		if err != nil {
			return
		}
		active := 0
		for _, e := range evs {
			if e.EventID == "" || e.Code == "" || e.NotBefore.IsZero() && !strings.Contains(string(body), "0001") {
				t.Fatalf("incomplete event %+v from %q", e, body)
			}
			if e.active() {
				active++
			}
		}
		ns, err := scheduledNotices(body, t0)
		if err != nil || len(ns) != active {
			t.Fatalf("scheduledNotices: %d notices, %v; want %d", len(ns), err, active)
		}
		for _, n := range ns {
			if !n.Advisory || n.Kind != KindMaintenance || n.ID == "" {
				t.Fatalf("notice %+v", n)
			}
		}
	})
}

func FuzzParseGCPValue(f *testing.F) {
	for _, v := range []string{"TRUE", "FALSE", "NONE", "MIGRATE_ON_HOST_MAINTENANCE", "TERMINATE_ON_HOST_MAINTENANCE", " TRUE\n", ""} {
		f.Add(false, v)
		f.Add(true, v)
	}
	f.Fuzz(func(t *testing.T, maintenance bool, val string) {
		path := gcpPathPreempted
		if maintenance {
			path = gcpPathMaintenance
		}
		k, final, active, err := parseGCPValue(path, val)
		if err != nil {
			if active || final || k != "" {
				t.Fatalf("error %v with a result %v %v %v", err, k, final, active)
			}
			return
		}
		if !active && (final || k != "") || active && k == "" || final && !active {
			t.Fatalf("inconsistent result for %s=%q: %v %v %v", path, val, k, final, active)
		}
	})
}

func FuzzParseAzureDocument(f *testing.F) {
	f.Add([]byte(`{"DocumentIncarnation": 3, "Events": [{"EventId": "C7061BAC", "EventStatus": "Scheduled", "EventType": "Preempt", "ResourceType": "VirtualMachine", "Resources": ["vm1"], "NotBefore": "Mon, 11 Apr 2022 22:26:58 GMT", "Description": "d", "EventSource": "Platform", "DurationInSeconds": -1}]}`))
	f.Add([]byte(`{"DocumentIncarnation": 1, "Events": []}`))
	f.Add([]byte(`{"DocumentIncarnation": 2, "Events": [{"EventId": "a", "EventType": "Reboot", "EventStatus": "Started", "NotBefore": ""}]}`))
	src := Azure(&AzureOptions{VMName: "vm1"})
	f.Fuzz(func(t *testing.T, body []byte) {
		doc, err := parseAzureDocument(body)
		if err != nil {
			return
		}
		for _, e := range doc.Events {
			if e.EventID == "" || e.EventType == "" {
				t.Fatalf("incomplete event %+v from %q", e, body)
			}
		}
		for _, n := range src.notices(doc, "vm1", t0) {
			if n.ID == "" || n.Source != SourceAzure || n.Deadline.IsZero() {
				t.Fatalf("notice %+v from %q", n, body)
			}
			if n.Advisory != (n.Kind == KindMaintenance) {
				t.Fatalf("default finality wrong for %+v", n)
			}
		}
	})
}
