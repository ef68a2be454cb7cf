//go:build kuberay_v1_6

// What differs in KubeRay v1.6.2's exported API from v1.7.0 (kuberay_v1_7.go). Built with
// `go build -tags kuberay_v1_6 -modfile v1.6.2/go.mod` (conformance/harness.py does it).

package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ray-project/kuberay/ray-operator/controllers/ray"
	"github.com/ray-project/kuberay/ray-operator/pkg/features"
)

// rayGates are KubeRay v1.6.2's feature gates (pkg/features/features.go).
var rayGates = []featuregate.Feature{
	features.RayClusterStatusConditions, features.RayJobDeletionPolicy, features.RayMultiHostIndexing,
	features.RayServiceIncrementalUpgrade, features.RayCronJob, features.AsyncJobInfoQuery,
}

// v1.6.2 has no RayService.spec.suspend and no Suspended/Suspending conditions: never true.
var (
	rayServiceSuspended  = "(no RayService suspend in v1.6.2)"
	rayServiceSuspending = "(no RayService suspend in v1.6.2)"
)

// v1.6.2's NewReconciler takes a context and registers a pod index on the manager
// (raycluster_controller.go:59-74); nothing lists by that index, so the stub ignores it.
func newClusterReconciler(ctx context.Context, mgr stubManager) *ray.RayClusterReconciler {
	return ray.NewReconciler(ctx, mgr, ray.RayClusterReconcilerOptions{})
}

type noIndexer struct{}

func (noIndexer) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	return nil
}

func (m stubManager) GetFieldIndexer() client.FieldIndexer { return noIndexer{} }

// v1.6.2 records events through the older record.EventRecorder (GetEventRecorderFor).
func (m stubManager) GetEventRecorderFor(string) record.EventRecorder {
	return legacyRecorder{m.rec.(recorder)}
}

type legacyRecorder struct{ r recorder }

func (l legacyRecorder) Event(o runtime.Object, eventtype, reason, message string) {
	l.r.Eventf(o, nil, eventtype, reason, "", "%s", message)
}

func (l legacyRecorder) Eventf(o runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	l.r.Eventf(o, nil, eventtype, reason, "", "%s", fmt.Sprintf(messageFmt, args...))
}

func (l legacyRecorder) AnnotatedEventf(o runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...any) {
	l.Eventf(o, eventtype, reason, messageFmt, args...)
}
