package main

// One case: the "before" object is written through the API-server simulation and converged
// (old clusters' deletion delay fast-forwarded), then the "after" object is written as an update
// and converged twice: first without fast-forward (old and new clusters coexist: the peak), then
// with it (the end state). What the operator did is read back from the world.

import (
	"crypto/sha1" //nolint:gosec // KubeRay's hash is SHA-1
	"encoding/base32"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
)

const maxRounds = 80

// Case is one input line.
type Case struct {
	ID           string            `json:"id"`
	Version      string            `json:"version"`
	FeatureGates map[string]bool   `json:"featureGates"`
	Env          map[string]string `json:"env"`
	Kind         string            `json:"kind"`
	Before       map[string]any    `json:"before"`
	After        map[string]any    `json:"after"`
}

// Result is one output line.
type Result struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Op: "update" (before and after), "create" (no before) or "delete" (no after).
	Op        string `json:"op"`
	Admission struct {
		Before *Admission `json:"before"`
		After  *Admission `json:"after,omitempty"`
	} `json:"admission"`
	// Rollout in the comparison's vocabulary (README.md): new-cluster, incremental,
	// cluster-in-place, serve-in-place, not-applied, none, suspend, resume, recreate, scale,
	// latent, next-run.
	Rollout    string      `json:"rollout"`
	Validation *Validation `json:"validation"`
	Clusters   struct {
		Created []string `json:"created"`
		Updated []string `json:"updated"`
		Deleted []string `json:"deleted"`
	} `json:"clusters"`
	// Serve config submissions after the change, by cluster role: "old" (ran before the change)
	// or "new" (created by it).
	Serve map[string]int `json:"serve"`
	// Pods created/deleted after the change, by "role/group" ("old/gpu-group", "new/headgroup").
	Pods struct {
		Created map[string]int `json:"created"`
		Deleted map[string]int `json:"deleted"`
	} `json:"pods"`
	// Every extended resource: the total before the change, the peak while the change rolls
	// out, and the difference (extra).
	Accelerators struct {
		Before map[string]string `json:"before"`
		Peak   map[string]string `json:"peak"`
		Extra  map[string]string `json:"extra"`
	} `json:"accelerators"`
	Hash      *Hashes   `json:"hash,omitempty"`
	Deletion  *Deletion `json:"deletion,omitempty"`
	Probe     string    `json:"probe,omitempty"` // RayCluster: do pods built later differ? "differs" | "same" | "removed-groups"
	Events    []string  `json:"events"`          // reasons recorded after the change, in order, deduplicated
	Rounds    []int     `json:"rounds"`
	Converged bool      `json:"converged"`
	Errors    int       `json:"reconcileErrors"`
	LastError string    `json:"lastReconcileError,omitempty"`
	Error     string    `json:"error,omitempty"` // the harness could not run the case
	Millis    int64     `json:"ms"`
	Debug     any       `json:"debug,omitempty"` // CONFORMANCE_DEBUG=1: submissions, events, changes
}

// Deletion: what a delete case found and left. Finalizers: the object's when it was deleted (the
// operator's: they hold it until the operator has cleaned up); StopJob: the Ray jobs the
// operator stopped through the dashboard (a RayJob's finalizer, rayjob_controller.go:112-139);
// Gone: the object no longer exists at the end; Left: the RayClusters and pods still there,
// none when GC and the operator removed everything it owned.
type Deletion struct {
	Finalizers []string `json:"finalizers"`
	StopJob    int      `json:"stopJob"`
	Gone       bool     `json:"gone"`
	Left       []string `json:"left"`
}

// Validation is the operator's validation verdict on the object after the change.
type Validation struct {
	Failed  bool   `json:"failed"`
	Reason  string `json:"reason,omitempty"` // the event reason, e.g. InvalidRayServiceSpec
	Message string `json:"message,omitempty"`
}

// Hashes: the RayCluster hash annotations before and after, and the goal hash of the stored
// "after" object with the exact bytes Go hashed (for a byte-for-byte comparison).
type Hashes struct {
	Annotation string            `json:"annotation"`
	Before     map[string]string `json:"before"`
	After      map[string]string `json:"after"`
	Goal       string            `json:"goal"`
	GoalInput  string            `json:"goalInput"`
}

func newObject(kind string) client.Object {
	switch kind {
	case "RayService":
		return &rayv1.RayService{}
	case "RayCluster":
		return &rayv1.RayCluster{}
	case "RayJob":
		return &rayv1.RayJob{}
	}
	return nil
}

// operation: what the case does to the object: "create" (no before), "delete" (no after) or
// "update" (both).
func (c *Case) operation() string {
	switch {
	case c.Before == nil && c.After != nil:
		return "create"
	case c.Before != nil && c.After == nil:
		return "delete"
	case c.Before != nil && c.After != nil:
		return "update"
	}
	return ""
}

func objectName(obj map[string]any) string {
	m, _ := obj["metadata"].(map[string]any)
	name, _ := m["name"].(string)
	return name
}

func runCase(c *Case, crds map[string]*crd) (res Result) {
	start := time.Now()
	res.ID, res.Kind, res.Op = c.ID, c.Kind, c.operation()
	res.Serve = map[string]int{}
	res.Pods.Created, res.Pods.Deleted = map[string]int{}, map[string]int{}
	defer func() {
		if r := recover(); r != nil {
			res.Error = fmt.Sprintf("panic: %v", r)
			if os.Getenv("CONFORMANCE_DEBUG") != "" {
				res.Error += "\n" + string(debug.Stack())
			}
		}
		res.Millis = time.Since(start).Milliseconds()
	}()
	api := crds[c.Kind]
	if api == nil || newObject(c.Kind) == nil || res.Op == "" {
		res.Error = "unsupported case: kind " + c.Kind + " with neither before nor after"
		return res
	}
	restore := applySettings(c)
	defer restore()
	w := newWorld()
	name := objectName(c.Before)
	if c.Before == nil {
		name = objectName(c.After)
	}

	// 1. before: create and converge to the steady state (a create starts from an empty world).
	w.phase = "before"
	var storedBefore map[string]any // as the operator reads it (storage version, defaulted)
	var obj client.Object
	if c.Before != nil {
		adm := api.admit(w.ctx, c.Before, nil)
		res.Admission.Before = &adm
		if !adm.Accepted {
			res.Error = "the before object is rejected: " + strings.Join(adm.Errors, "; ")
			return res
		}
		var err error
		storedBefore, err = api.toStorage(adm.Stored)
		must(err)
		obj = newObject(c.Kind)
		must(runtime.DefaultUnstructuredConverter.FromUnstructured(storedBefore, obj))
		must(w.c.Create(w.ctx, obj))
		n, ok := w.converge(maxRounds, true)
		res.Rounds = append(res.Rounds, n)
		res.Converged = ok
	} else {
		res.Converged = true
	}
	before := w.snapshot(c.Kind, name)

	// 2. after: the user's write (an update of the stored object, or a create), or the delete.
	w.phase = "after"
	var storedAfter map[string]any
	switch res.Op {
	case "delete":
		// A DELETE runs no validation of the object (registry/customresource/strategy.go has no
		// delete hook); finalizers keep it Terminating until the operator removes them.
		res.Admission.After = &Admission{Accepted: true}
		cur := newObject(c.Kind)
		must(w.c.Get(w.ctx, client.ObjectKeyFromObject(obj), cur))
		res.Deletion = &Deletion{Finalizers: cur.GetFinalizers()}
		must(w.c.Delete(w.ctx, cur, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	case "create":
		adm2 := api.admit(w.ctx, c.After, nil)
		res.Admission.After = &adm2
		if adm2.Accepted {
			var err error
			storedAfter, err = api.toStorage(adm2.Stored)
			must(err)
			obj = newObject(c.Kind)
			must(runtime.DefaultUnstructuredConverter.FromUnstructured(storedAfter, obj))
			must(w.c.Create(w.ctx, obj))
		}
	default:
		cur := newObject(c.Kind)
		must(w.c.Get(w.ctx, client.ObjectKeyFromObject(obj), cur))
		curU, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
		must(err)
		old := runtime.DeepCopyJSON(storedBefore)
		old["metadata"] = curU["metadata"]
		if st, ok := curU["status"]; ok {
			old["status"] = st
		}
		// The stored object as the API server reads it in the version of the write.
		old, err = api.convert(old, versionOf(c.After))
		if err != nil { // a version the CRD does not serve: admit rejects the write itself
			old = runtime.DeepCopyJSON(storedBefore)
		}
		next := runtime.DeepCopyJSON(c.After)
		next["metadata"] = userMetadata(c.After, curU)
		adm2 := api.admit(w.ctx, next, old)
		res.Admission.After = &adm2
		if adm2.Accepted {
			storedAfter, err = api.toStorage(adm2.Stored)
			must(err)
			obj2 := newObject(c.Kind)
			must(runtime.DefaultUnstructuredConverter.FromUnstructured(storedAfter, obj2))
			obj2.SetResourceVersion(cur.GetResourceVersion())
			must(w.c.Update(w.ctx, obj2))
			if versionOf(c.After) != api.storage {
				// The status went through the write's version too (PrepareForUpdate keeps the old
				// one, read in that version: v1alpha1 has no conditions); the fake client's Update
				// keeps the stored status, so it is written as the API server stored it.
				st := newObject(c.Kind)
				must(runtime.DefaultUnstructuredConverter.FromUnstructured(storedAfter, st))
				st.SetResourceVersion(obj2.GetResourceVersion())
				must(w.c.Status().Update(w.ctx, st))
			}
		}
	}
	if res.Admission.After.Accepted {
		n, ok := w.converge(maxRounds, false)
		res.Rounds = append(res.Rounds, n)
		w.phase = "settle"
		w.fastForward()
		n2, ok2 := w.converge(maxRounds, true)
		res.Rounds = append(res.Rounds, n2)
		res.Converged = res.Converged && ok && ok2
	}
	after := w.snapshot(c.Kind, name)
	w.readBack(&res, before, after)
	switch {
	case !res.Admission.After.Accepted:
		res.Rollout = "not-applied"
	case res.Op == "create":
		w.created(&res, after, storedAfter)
	case res.Op == "delete":
		w.deleted(&res, before, after)
	case c.Kind == "RayService":
		w.rayService(&res, before, after, storedBefore, storedAfter)
	case c.Kind == "RayCluster":
		w.rayCluster(&res, before, after, storedBefore, storedAfter)
	case c.Kind == "RayJob":
		w.rayJob(&res, before, after, storedBefore, storedAfter)
	}
	for k, v := range w.errors {
		if k != "before" {
			res.Errors += v
		}
	}
	res.LastError = w.lastErr
	if os.Getenv("CONFORMANCE_DEBUG") != "" {
		res.Debug = map[string]any{"submissions": w.submissions, "events": w.events, "log": w.log, "status": after.obj, "clusters": after.clusters, "errors": w.errors, "allErrors": w.allErrors}
	}
	return res
}

// userMetadata: the metadata of the user's "after" object, with what the server and the
// operator own kept from the stored object (uid, resourceVersion, creationTimestamp,
// generation, finalizers: pitfall 13).
func userMetadata(after map[string]any, stored map[string]any) map[string]any {
	m := map[string]any{}
	if am, ok := after["metadata"].(map[string]any); ok {
		m = runtime.DeepCopyJSON(am)
	}
	sm, _ := stored["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "finalizers", "namespace"} {
		if v, ok := sm[k]; ok {
			m[k] = v
		}
	}
	return m
}

// ---- snapshots -----------------------------------------------------------------------------

type snapshot struct {
	obj      client.Object                // the RayService / RayCluster / RayJob; nil if there is none
	clusters map[string]*rayv1.RayCluster // by name
	heads    map[string]*corev1.Pod       // head pod by cluster name
	pods     map[string][]corev1.Pod      // by cluster name
	totals   map[string]int64
}

func (w *world) snapshot(kind, name string) *snapshot {
	s := &snapshot{obj: newObject(kind), clusters: map[string]*rayv1.RayCluster{}, heads: map[string]*corev1.Pod{},
		pods: map[string][]corev1.Pod{}, totals: map[string]int64{}}
	// nil: there is no such object (before a create, after a delete).
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: namespace, Name: name}, s.obj); apierrors.IsNotFound(err) {
		s.obj = nil
	} else {
		must(err)
	}
	var clusters rayv1.RayClusterList
	var pods corev1.PodList
	must(w.c.List(w.ctx, &clusters))
	must(w.c.List(w.ctx, &pods))
	for i := range clusters.Items {
		s.clusters[clusters.Items[i].Name] = &clusters.Items[i]
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		cl := p.Labels[utils.RayClusterLabelKey]
		s.pods[cl] = append(s.pods[cl], *p)
		if p.Labels[utils.RayNodeTypeLabelKey] == string(rayv1.HeadNode) {
			s.heads[cl] = p
		}
		for k, v := range podResources(p) {
			s.totals[k] += v
		}
	}
	return s
}

// readBack fills what every kind shares: clusters and pods changed after the change, Serve
// submissions, the accelerator peak and the events.
func (w *world) readBack(res *Result, before, after *snapshot) {
	role := func(cluster string) string {
		if _, ok := before.clusters[cluster]; ok {
			return "old"
		}
		return "new"
	}
	for _, ch := range w.log {
		if ch.Phase == "before" {
			continue
		}
		switch {
		case ch.Kind == "RayCluster" && ch.Verb == "created":
			res.Clusters.Created = appendOnce(res.Clusters.Created, ch.Name)
		case ch.Kind == "RayCluster" && ch.Verb == "updated" && role(ch.Name) == "old":
			res.Clusters.Updated = appendOnce(res.Clusters.Updated, ch.Name)
		case ch.Kind == "RayCluster" && ch.Verb == "deleted":
			res.Clusters.Deleted = appendOnce(res.Clusters.Deleted, ch.Name)
		case ch.Kind == "Pod" && ch.Verb == "created":
			res.Pods.Created[role(ch.Cluster)+"/"+ch.Group]++
		case ch.Kind == "Pod" && ch.Verb == "deleted":
			res.Pods.Deleted[role(ch.Cluster)+"/"+ch.Group]++
		}
	}
	for _, s := range w.submissions {
		if s.Phase != "before" {
			res.Serve[role(s.Cluster)]++
		}
	}
	res.Accelerators.Before, res.Accelerators.Peak, res.Accelerators.Extra = map[string]string{}, map[string]string{}, map[string]string{}
	peak := map[string]int64{}
	for k, v := range before.totals {
		peak[k] = v
	}
	for k, v := range w.peak["after"] {
		if v > peak[k] {
			peak[k] = v
		}
	}
	for k, v := range peak {
		res.Accelerators.Peak[k] = milliString(v)
		if b := before.totals[k]; v > b {
			res.Accelerators.Extra[k] = milliString(v - b)
		}
	}
	for k, v := range before.totals {
		res.Accelerators.Before[k] = milliString(v)
	}
	seen := map[string]bool{}
	for _, e := range w.events {
		if e.Phase != "before" && !seen[e.Reason] {
			seen[e.Reason] = true
			res.Events = append(res.Events, e.Reason)
		}
	}
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func (w *world) eventsAfter(reasons ...string) *Event {
	for i := range w.events {
		e := &w.events[i]
		if e.Phase == "before" {
			continue
		}
		for _, r := range reasons {
			if e.Reason == r {
				return e
			}
		}
	}
	return nil
}

// ---- validation -------------------------------------------------------------------------------

// serviceValidation: the Ready condition's reason and the event (rayservice_controller.go:157-171).
func (w *world) serviceValidation(rs *rayv1.RayService) *Validation {
	v := &Validation{}
	if cond := meta.FindStatusCondition(rs.Status.Conditions, string(rayv1.RayServiceReady)); cond != nil &&
		cond.Reason == string(rayv1.RayServiceValidationFailed) {
		v.Failed, v.Message = true, cond.Message
		if e := w.eventsAfter(string(utils.InvalidRayServiceSpec), string(utils.InvalidRayServiceMetadata)); e != nil {
			v.Reason = e.Reason
		}
	}
	return v
}

// clusterValidation: an event only, the cluster is not reconciled (rc.go:165-215). The
// autoscaler-v1 restartPolicy event shares the reason but is a warning ("spec warning").
func (w *world) clusterValidation() *Validation {
	v := &Validation{}
	for _, e := range w.events {
		if e.Phase == "before" || !strings.HasPrefix(e.Reason, "InvalidRayCluster") || strings.Contains(e.Note, "spec warning") {
			continue
		}
		v.Failed, v.Reason, v.Message = true, e.Reason, e.Note
		break
	}
	return v
}

// jobValidation: JobDeploymentStatus ValidationFailed and an event (rayjob_controller.go:147-161).
func (w *world) jobValidation(job *rayv1.RayJob) *Validation {
	v := &Validation{}
	if job.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusValidationFailed {
		v.Failed, v.Message = true, job.Status.Message
		if e := w.eventsAfter(string(utils.InvalidRayJobSpec), string(utils.InvalidRayJobMetadata), string(utils.InvalidRayJobStatus)); e != nil {
			v.Reason = e.Reason
		}
	}
	return v
}

// ---- create and delete --------------------------------------------------------------------------

// managedElsewhere: spec.managedBy names another controller, so KubeRay skips the object
// (rayservice_controller.go:120-123, raycluster_controller.go:157-160, rayjob_controller.go:107-110).
func managedElsewhere(obj client.Object) bool {
	switch o := obj.(type) {
	case *rayv1.RayService:
		return utils.ManagedByExternalController(o.Spec.ManagedBy) != nil
	case *rayv1.RayCluster:
		return utils.ManagedByExternalController(o.Spec.ManagedBy) != nil
	case *rayv1.RayJob:
		return utils.ManagedByExternalController(o.Spec.ManagedBy) != nil
	}
	return false
}

// created classifies a create the API server admitted: not-applied (KubeRay's validation fails:
// nothing is built), none (managedBy another controller: nothing is built here), else create
// (what was built is in clusters, pods, serve and accelerators: nothing for a suspended object).
func (w *world) created(res *Result, after *snapshot, stored map[string]any) {
	switch o := after.obj.(type) {
	case *rayv1.RayService:
		res.Validation = w.serviceValidation(o)
		res.Hash = w.serviceHashes(nil, after, o)
	case *rayv1.RayCluster:
		res.Validation = w.clusterValidation()
		res.Hash = w.clusterHashes(nil, after, o)
	case *rayv1.RayJob:
		res.Validation = w.jobValidation(o)
	default:
		panic("the created object is gone")
	}
	switch {
	case res.Validation.Failed:
		res.Rollout = "not-applied"
	case managedElsewhere(after.obj):
		res.Rollout = "none"
	default:
		res.Rollout = "create"
	}
}

// deleted classifies a delete: none (managedBy another controller: KubeRay built nothing and
// removes nothing), delete (the object is gone, with everything it owned), not-applied (it is
// still there, Terminating: a finalizer nobody removes).
func (w *world) deleted(res *Result, before, after *snapshot) {
	res.Deletion.Gone, res.Deletion.StopJob = after.obj == nil, w.stopJobs
	for name := range after.clusters {
		res.Deletion.Left = append(res.Deletion.Left, "RayCluster/"+name)
	}
	for cluster, pods := range after.pods {
		for _, p := range pods {
			res.Deletion.Left = append(res.Deletion.Left, "Pod/"+cluster+"/"+p.Name)
		}
	}
	sort.Strings(res.Deletion.Left)
	switch {
	case managedElsewhere(before.obj):
		res.Rollout = "none"
	case res.Deletion.Gone:
		res.Rollout = "delete"
	default:
		res.Rollout = "not-applied"
	}
}

// ---- RayService -------------------------------------------------------------------------------

func (w *world) rayService(res *Result, before, after *snapshot, storedBefore, storedAfter map[string]any) {
	rs := after.obj.(*rayv1.RayService)
	b := before.obj.(*rayv1.RayService)
	res.Hash = w.serviceHashes(before, after, rs)
	res.Validation = w.serviceValidation(rs)
	wasSuspended := meta.IsStatusConditionTrue(b.Status.Conditions, rayServiceSuspended)
	// Suspending counts: the deletion may wait on finalizers (GCS FT Redis cleanup).
	isSuspended := meta.IsStatusConditionTrue(rs.Status.Conditions, rayServiceSuspended) ||
		meta.IsStatusConditionTrue(rs.Status.Conditions, rayServiceSuspending)
	created := len(res.Clusters.Created) > 0
	clusterPending, servePending := w.pendingServiceChange(rs, after, storedBefore, storedAfter)
	// A cluster change the hash sees (goal hash != the active cluster's annotation) that was not
	// carried out, versus one only in fields the hash mutes (replicas, bounds, tolerations,
	// suspend...), which KubeRay never copies to a running cluster.
	hashPending := clusterPending && res.Hash.After[utils.HashWithoutReplicasAndWorkersToDeleteKey] != "" &&
		res.Hash.After[utils.HashWithoutReplicasAndWorkersToDeleteKey] != res.Hash.Goal
	if after.clusters[rs.Status.ActiveServiceStatus.RayClusterName] == nil {
		hashPending = clusterPending // no cluster runs: any change of the stored spec waits
	}
	// One word per case, first match wins: what the operator did to clusters; a hashed cluster
	// change it left undone; Serve re-submitted; then changes only in muted fields or Serve
	// left undone.
	switch {
	case res.Validation.Failed:
		res.Rollout = "not-applied"
	case isSuspended && !wasSuspended:
		res.Rollout = "suspend"
	case wasSuspended && !isSuspended && created:
		res.Rollout = "resume"
	case created && w.hasGateway():
		res.Rollout = "incremental"
	case created:
		res.Rollout = "new-cluster"
	case len(res.Clusters.Updated) > 0:
		res.Rollout = "cluster-in-place"
	case utils.ManagedByExternalController(rs.Spec.ManagedBy) != nil:
		res.Rollout = "none" // the operator skips the RayService (rayservice_controller.go:120-123)
	case hashPending:
		res.Rollout = "not-applied"
	case res.Serve["old"] > 0:
		res.Rollout = "serve-in-place"
	case clusterPending || servePending:
		res.Rollout = "not-applied"
	default:
		res.Rollout = "none"
	}
}

// hasGateway: an incremental upgrade routes through a Gateway the operator creates
// (rayservice_controller.go reconcileGateway); the other strategies create none.
func (w *world) hasGateway() bool {
	var gws gwv1.GatewayList
	must(w.c.List(w.ctx, &gws))
	return len(gws.Items) > 0
}

// pendingServiceChange: what runs is not what the RayService asks for. cluster: the active
// cluster's spec differs from rayClusterConfig (suspend included: modifyRayCluster keeps the
// cluster's own, rayservice_controller.go:1466-1475); with no cluster running (suspended), the
// stored spec changed. serve: the active cluster's last Serve config differs from serveConfigV2.
func (w *world) pendingServiceChange(rs *rayv1.RayService, after *snapshot, storedBefore, storedAfter map[string]any) (bool, bool) {
	active := after.clusters[rs.Status.ActiveServiceStatus.RayClusterName]
	if active == nil {
		bs, _ := storedBefore["spec"].(map[string]any)
		as, _ := storedAfter["spec"].(map[string]any)
		return !reflect.DeepEqual(withoutKey(bs, "suspend"), withoutKey(as, "suspend")), false
	}
	cluster := !utils.CompareJsonStruct(rs.Spec.RayClusterSpec, active.Spec)
	var last map[string]any
	for _, s := range w.submissions {
		if s.Cluster == active.Name {
			last = s.Config
		}
	}
	var want map[string]any
	if err := yaml.Unmarshal([]byte(rs.Spec.ServeConfigV2), &want); err != nil || last == nil {
		return cluster, rs.Spec.ServeConfigV2 != "" && last == nil
	}
	return cluster, !utils.CompareJsonStruct(want, withoutKey(last, "target_capacity"))
}

func withoutKey(m map[string]any, key string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// serviceHashes: the annotations KubeRay writes on a RayService's RayClusters
// (utils/constant.go:26-29) on the active cluster before and after, and the goal hash of the
// stored "after" spec: GenerateHashWithoutReplicasAndWorkersToDelete of rayClusterSpecForHashing
// (rayservice_controller.go:1498-1502: the spec without Suspend).
func (w *world) serviceHashes(before, after *snapshot, rs *rayv1.RayService) *Hashes {
	h := &Hashes{Annotation: utils.HashWithoutReplicasAndWorkersToDeleteKey, Before: map[string]string{}}
	if before != nil {
		b := before.obj.(*rayv1.RayService)
		h.Before = clusterAnnotations(before.clusters[b.Status.ActiveServiceStatus.RayClusterName])
	}
	h.After = clusterAnnotations(after.clusters[rs.Status.ActiveServiceStatus.RayClusterName])
	spec := rs.Spec.RayClusterSpec.DeepCopy()
	spec.Suspend = nil
	h.Goal, h.GoalInput = goalHash(*spec)
	return h
}

func clusterAnnotations(c *rayv1.RayCluster) map[string]string {
	out := map[string]string{}
	if c == nil {
		return out
	}
	for _, k := range []string{utils.HashWithoutReplicasAndWorkersToDeleteKey, utils.NumWorkerGroupsKey, utils.KubeRayVersion} {
		if v, ok := c.Annotations[k]; ok {
			out[k] = v
		}
	}
	return out
}

// goalHash returns KubeRay's hash of spec and the JSON bytes it is the SHA-1 of. The bytes are
// re-derived here (the muting of utils/util.go:645-668) and checked against KubeRay's own
// function: a mismatch is a harness error, never silently reported.
func goalHash(spec rayv1.RayClusterSpec) (string, string) {
	want, err := utils.GenerateHashWithoutReplicasAndWorkersToDelete(spec)
	must(err)
	s := spec.DeepCopy()
	s.HeadGroupSpec.Template.Spec.Tolerations = nil
	s.HeadGroupSpec.Template.Spec.SchedulingGates = nil
	for i := range s.WorkerGroupSpecs {
		g := &s.WorkerGroupSpecs[i]
		g.Replicas, g.MaxReplicas, g.MinReplicas, g.ScaleStrategy.WorkersToDelete = nil, nil, nil, nil
		g.Template.Spec.Tolerations, g.Template.Spec.SchedulingGates = nil, nil
	}
	s.UpgradeStrategy = nil
	data, err := json.Marshal(s)
	must(err)
	sum := sha1.Sum(data) //nolint:gosec
	if got := base32.HexEncoding.EncodeToString(sum[:]); got != want {
		panic(fmt.Sprintf("hash input re-derivation is wrong: %s != %s", got, want))
	}
	return want, string(data)
}

// ---- RayCluster -------------------------------------------------------------------------------

func (w *world) rayCluster(res *Result, before, after *snapshot, storedBefore, stored map[string]any) {
	rc := after.obj.(*rayv1.RayCluster)
	b := before.obj.(*rayv1.RayCluster)
	res.Hash = w.clusterHashes(before, after, rc)
	res.Validation = w.clusterValidation()
	recreated := false
	for _, e := range w.events {
		if e.Phase != "before" && e.Reason == string(utils.DeletedPod) && strings.Contains(e.Note, "Recreate upgradeStrategy") {
			recreated = true
		}
	}
	moved := len(res.Pods.Created)+len(res.Pods.Deleted) > 0
	wasSuspended := b.Spec.Suspend != nil && *b.Spec.Suspend
	isSuspended := rc.Spec.Suspend != nil && *rc.Spec.Suspend
	switch {
	case res.Validation.Failed:
		res.Rollout = "not-applied"
	case utils.ManagedByExternalController(rc.Spec.ManagedBy) != nil:
		res.Rollout = "none" // the operator skips the RayCluster (raycluster_controller.go:157-160)
	case isSuspended && !wasSuspended && moved:
		res.Rollout = "suspend"
	case wasSuspended && !isSuspended && moved:
		res.Rollout = "resume"
	case recreated:
		res.Rollout = "recreate"
	case moved:
		res.Rollout = "scale"
	default:
		// Nothing moved now. Do pods built later differ? Build the cluster from scratch from the
		// stored "before" and "after" objects, each in a world of its own, and compare the pods.
		res.Probe = "same"
		if freshPods(storedBefore) != freshPods(stored) {
			res.Probe = "differs"
			// Pods of a worker group the new spec no longer names are never visited again
			// (reconcilePods loops over the spec's groups, raycluster_controller.go:1069): they
			// keep running, abandoned, and a group at zero pods simply stops being scaled. If the
			// removed groups are the whole difference, the change is one KubeRay never carries
			// out on pods, not one that waits for pods built later.
			if trimmed := withoutGroupsOf(storedBefore, rc); trimmed != nil && freshPods(trimmed) == freshPods(stored) {
				res.Probe = "removed-groups"
			}
		}
		if res.Probe == "differs" {
			res.Rollout = "latent"
		} else {
			res.Rollout = "none"
		}
	}
}

// withoutGroupsOf: the stored object with only the worker groups rc still names; nil when rc
// names them all.
func withoutGroupsOf(stored map[string]any, rc *rayv1.RayCluster) map[string]any {
	names := map[string]bool{}
	for _, g := range rc.Spec.WorkerGroupSpecs {
		names[g.GroupName] = true
	}
	obj := runtime.DeepCopyJSON(stored)
	spec, _ := obj["spec"].(map[string]any)
	groups, _ := spec["workerGroupSpecs"].([]any)
	kept := []any{}
	for _, g := range groups {
		if gm, _ := g.(map[string]any); names[fmt.Sprint(gm["groupName"])] {
			kept = append(kept, g)
		}
	}
	if len(kept) == len(groups) {
		return nil
	}
	spec["workerGroupSpecs"] = kept
	return obj
}

// clusterHashes: the head pod's ray.io/upgrade-strategy-recreate-hash (raycluster_controller.go:
// 1636-1644) before (nil: none ran) and after, and the goal: GenerateHashWithoutReplicasAndWorkersToDelete
// of the spec after setDefaults (rc.go:2422-2432 only fills nil rayStartParams, which omitempty
// hides from the hash).
func (w *world) clusterHashes(before, after *snapshot, rc *rayv1.RayCluster) *Hashes {
	h := &Hashes{Annotation: utils.UpgradeStrategyRecreateHashKey, Before: map[string]string{},
		After: headAnnotations(after.heads[rc.Name])}
	if before != nil {
		h.Before = headAnnotations(before.heads[before.obj.GetName()])
	}
	spec := rc.Spec.DeepCopy()
	if spec.HeadGroupSpec.RayStartParams == nil {
		spec.HeadGroupSpec.RayStartParams = map[string]string{}
	}
	for i := range spec.WorkerGroupSpecs {
		if spec.WorkerGroupSpecs[i].RayStartParams == nil {
			spec.WorkerGroupSpecs[i].RayStartParams = map[string]string{}
		}
	}
	h.Goal, h.GoalInput = goalHash(*spec)
	// A head pod built after the change carries the goal: a check of the re-derivation above.
	if head := after.heads[rc.Name]; head != nil && w.builtAfterChange(head.Name) &&
		head.Annotations[utils.UpgradeStrategyRecreateHashKey] != h.Goal {
		panic("the head pod's recreate hash is not the goal hash: " + head.Annotations[utils.UpgradeStrategyRecreateHashKey])
	}
	return h
}

// builtAfterChange: the pod was created after the "after" object was written.
func (w *world) builtAfterChange(pod string) bool {
	for _, ch := range w.log {
		if ch.Kind == "Pod" && ch.Name == pod && ch.Verb == "created" {
			return ch.Phase != "before"
		}
	}
	return false
}

// freshPods: the pods the operator builds for a stored RayCluster in an empty world, every
// worker group with at least one replica (a group at zero would hide its template).
func freshPods(stored map[string]any) string {
	key, _ := json.Marshal(stored)
	if shape, ok := freshMemo[string(key)]; ok {
		return shape
	}
	obj := runtime.DeepCopyJSON(stored)
	spec, _ := obj["spec"].(map[string]any)
	groups, _ := spec["workerGroupSpecs"].([]any)
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		if n, _ := number(gm["replicas"]); n < 1 {
			gm["replicas"] = int64(1)
		}
		if n, ok := number(gm["maxReplicas"]); ok && n < 1 {
			gm["maxReplicas"] = int64(1)
		}
	}
	meta := obj["metadata"].(map[string]any)
	obj["metadata"] = map[string]any{"name": meta["name"], "namespace": namespace, "labels": meta["labels"],
		"annotations": meta["annotations"]}
	delete(obj, "status")
	w := newWorld()
	w.phase = "probe"
	rc := &rayv1.RayCluster{}
	must(runtime.DefaultUnstructuredConverter.FromUnstructured(obj, rc))
	must(w.c.Create(w.ctx, rc))
	w.converge(maxRounds, true)
	var pods corev1.PodList
	must(w.c.List(w.ctx, &pods))
	shape := podShapes(pods.Items)
	if dir := os.Getenv("CONFORMANCE_DEBUG_SHAPES"); dir != "" {
		_ = os.WriteFile(fmt.Sprintf("%s/shape-%d.txt", dir, len(freshMemo)), []byte(shape), 0o644)
	}
	freshMemo[string(key)] = shape
	return shape
}

// number reads a JSON number (float64 from encoding/json, int64 from the API machinery).
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// freshMemo: fresh-world answers by stored object (many cases share their "before").
var freshMemo = map[string]string{}

func headAnnotations(p *corev1.Pod) map[string]string {
	out := map[string]string{}
	if p == nil {
		return out
	}
	for _, k := range []string{utils.UpgradeStrategyRecreateHashKey, utils.KubeRayVersion} {
		if v, ok := p.Annotations[k]; ok {
			out[k] = v
		}
	}
	return out
}

// podShapes: the distinct pods of a cluster (their specs, labels and annotations, without what
// names them, the status and the hash annotation), sorted: how many of each is scale, not this.
func podShapes(pods []corev1.Pod) string {
	var shapes []string
	seen := map[string]bool{}
	for _, p := range pods {
		q := p.DeepCopy()
		q.ObjectMeta = metaShape(q)
		q.Status = corev1.PodStatus{}
		q.Spec.Hostname = ""
		data, _ := json.Marshal(q)
		if !seen[string(data)] {
			seen[string(data)] = true
			shapes = append(shapes, string(data))
		}
	}
	sort.Strings(shapes)
	return strings.Join(shapes, "\n")
}

func metaShape(p *corev1.Pod) (m metav1.ObjectMeta) {
	m.Labels = map[string]string{}
	for k, v := range p.Labels {
		if k == "ray.io/worker-group-replica-name" { // a random suffix per replica (multi-host groups)
			v = "<random>"
		}
		m.Labels[k] = v
	}
	m.Annotations = map[string]string{}
	for k, v := range p.Annotations {
		if k != utils.UpgradeStrategyRecreateHashKey {
			m.Annotations[k] = v
		}
	}
	m.GenerateName = p.GenerateName
	return m
}

// ---- RayJob ---------------------------------------------------------------------------------

func (w *world) rayJob(res *Result, before, after *snapshot, storedBefore, stored map[string]any) {
	job := after.obj.(*rayv1.RayJob)
	b := before.obj.(*rayv1.RayJob)
	res.Validation = w.jobValidation(job)
	created := len(res.Clusters.Created) > 0
	deleted := len(res.Clusters.Deleted) > 0
	switch {
	case res.Validation.Failed:
		res.Rollout = "not-applied"
	case job.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusSuspended && b.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusSuspended:
		res.Rollout = "suspend"
	case b.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusSuspended && created:
		res.Rollout = "resume"
	case created || deleted:
		res.Rollout = "new-cluster" // not expected: reported as it is
	case utils.ManagedByExternalController(job.Spec.ManagedBy) != nil:
		res.Rollout = "none" // the operator skips the RayJob (rayjob_controller.go:107-110)
	default:
		// The running job keeps its cluster and submission ("Disregard changes in RayClusterSpec",
		// rayjob_controller.go:988-992). Would the next run differ? Run the stored "before" and
		// "after" objects from scratch, each in a world of its own, and compare what they start.
		res.Probe = "same"
		if freshRun(storedBefore) != freshRun(stored) {
			res.Probe = "differs"
		}
		if res.Probe == "differs" {
			res.Rollout = "next-run"
		} else {
			res.Rollout = "none"
		}
	}
}

// freshRun: what the operator starts for a stored RayJob in an empty world: its RayCluster's
// spec, the submitter Job's pod template and the dashboard submissions, with the random job id
// and cluster name replaced by placeholders.
func freshRun(stored map[string]any) string {
	key, _ := json.Marshal(map[string]any{"run": stored})
	if shape, ok := freshMemo[string(key)]; ok {
		return shape
	}
	obj := runtime.DeepCopyJSON(stored)
	meta := obj["metadata"].(map[string]any)
	obj["metadata"] = map[string]any{"name": meta["name"], "namespace": namespace, "labels": meta["labels"],
		"annotations": meta["annotations"]}
	delete(obj, "status")
	if spec, ok := obj["spec"].(map[string]any); ok {
		spec["suspend"] = false
	}
	w := newWorld()
	w.phase = "probe"
	job := &rayv1.RayJob{}
	must(runtime.DefaultUnstructuredConverter.FromUnstructured(obj, job))
	must(w.c.Create(w.ctx, job))
	w.converge(maxRounds, true)
	must(w.c.Get(w.ctx, client.ObjectKeyFromObject(job), job))
	var clusters rayv1.RayClusterList
	var jobs batchv1.JobList
	must(w.c.List(w.ctx, &clusters))
	must(w.c.List(w.ctx, &jobs))
	var parts []string
	for _, c := range clusters.Items {
		data, _ := json.Marshal(c.Spec)
		parts = append(parts, "cluster "+string(data))
	}
	for _, j := range jobs.Items {
		data, _ := json.Marshal(j.Spec.Template.Spec)
		parts = append(parts, "submitter "+string(data))
	}
	parts = append(parts, w.jobSubmissions...)
	out := strings.Join(parts, "\n")
	for _, s := range []string{job.Status.JobId, job.Status.RayClusterName} {
		if s != "" {
			out = strings.ReplaceAll(out, s, "<id>")
		}
	}
	freshMemo[string(key)] = out
	return out
}
