//go:build !kuberay_v1_6

// What differs in KubeRay v1.7.0's exported API from v1.6.2 (kuberay_v1_6.go): the default build.

package main

import (
	"context"

	"k8s.io/component-base/featuregate"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray"
	"github.com/ray-project/kuberay/ray-operator/pkg/features"
)

// rayGates are KubeRay's feature gates (pkg/features/features.go:105-117); their defaults are
// read once at start, before any case changes them.
var rayGates = []featuregate.Feature{
	features.RayClusterStatusConditions, features.RayJobDeletionPolicy, features.RayMultiHostIndexing,
	features.RayServiceIncrementalUpgrade, features.RayCronJob, features.SidecarSubmitterRestart,
	features.RayClusterNetworkPolicy, features.GCSFaultToleranceEmbeddedStorage, features.RayClusterMTLS,
	features.RayClusterHistoryServer, features.KubernetesWAS,
}

// The RayService suspend conditions (RayService.spec.suspend is new in v1.7.0).
var (
	rayServiceSuspended  = string(rayv1.RayServiceSuspended)
	rayServiceSuspending = string(rayv1.RayServiceSuspending)
)

func newClusterReconciler(_ context.Context, mgr stubManager) *ray.RayClusterReconciler {
	return ray.NewReconciler(mgr, ray.RayClusterReconcilerOptions{})
}
