// Package examples holds runnable programs that compose spotcheck's packages
// the way an embedder would: trainer (a gorgonia trainer that survives
// interruptions), spotprice (rank spot offers by expected job cost) and k8s
// (a Kubernetes Job template for a spot node pool). It is its own module so
// that the library's importers never download gorgonia or Kubernetes.
package examples
