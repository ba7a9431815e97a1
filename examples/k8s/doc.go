// Package k8s holds Kubernetes manifests that run the spotcheck trainer
// (examples/trainer) as a batch/v1 Job on spot capacity: one file per
// platform (Karpenter on EKS, EKS managed node groups, GKE Spot VMs), each
// self-contained, no kustomize needed. README.md explains every choice.
//
// The Go code in this directory is only the test that decodes every manifest
// strictly with the k8s.io/api types and checks the invariants that make a
// preemption cheap: the pod tolerates and selects spot nodes, its grace
// period fits the platform's notice and exceeds the trainer's emergency-save
// margin, pods failed by a disruption or by the trainer's reschedule exit
// code do not count against backoffLimit, and the arguments are flags the
// trainer knows.
package k8s
