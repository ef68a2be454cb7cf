package main

// The operator-upgrade case (README.md, "The operator-upgrade case"): objects created and
// reconciled by one KubeRay version, then reconciled by another. Two versions of one Go module
// cannot live in one binary, so the work is split in two runs of two builds:
//
//   -dump-world (old build)  a case's "before" object goes through the API server part and is
//                            reconciled to a fixpoint, as a normal case's first phase; then every
//                            object of the fake client (every list type of the scheme) and what
//                            the recording dashboard holds (the Serve applications and the last
//                            Serve config per cluster) are written as one JSON line.
//   -upgrade (new build)     a dumped world is loaded into a fresh world (new reconcilers, empty
//                            in-memory caches: a restarted operator) and reconciled to a fixpoint;
//                            what changed is read back and classified.
//
// What the stored objects look like to the new operator. A real upgrade keeps etcd's contents; the
// new CRDs are applied, and a custom resource read from etcd is decoded through the storage codec
// of the new CRD: pruning and ObjectMeta coercion (unstructuredSchemaCoercer.apply with
// dropInvalidMetadata and repairGeneration, apiextensions-apiserver v0.36.0
// pkg/apiserver/customresource_handler.go:1276-1310, :1406-1471) and structural defaulting with
// the storage version's schema (unstructuredDefaulter, :1240-1248, run by the versioning codec on
// decode, apimachinery pkg/runtime/serializer/versioning/versioning.go:170,187). Nothing is
// validated on a read and nothing is written back. readStored does exactly that for the three
// ray.io kinds, with the new build's CRD files (-crds). Objects the old operator wrote went through
// the old API server in a real cluster (pruned and defaulted with the old CRDs on every write),
// while the fake client stores them as the operator sent them: the dump applies the old build's
// write path (prune + default, no validation) to every ray.io object, so the dump is what etcd
// held; the paths that changed are reported (storeDefaulted). Core objects (pods, Services, ...)
// are stored as they are: core defaulting is not run anywhere in this harness.

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
)

// WorldDump is one dumped world (one JSON line of -dump-world, one input line of -upgrade).
type WorldDump struct {
	ID           string            `json:"id"`
	KubeRay      string            `json:"kuberay"` // utils.KUBERAY_VERSION of the build that made it
	Kind         string            `json:"kind"`
	Name         string            `json:"name"`
	FeatureGates map[string]bool   `json:"featureGates"`
	Env          map[string]string `json:"env"`
	// Objects: every object of the fake client as stored (apiVersion and kind set).
	Objects    []map[string]any         `json:"objects"`
	Dashboards map[string]DashboardDump `json:"dashboards"`
	UID        int                      `json:"uid"` // counters, so later names and IPs do not collide
	IP         int                      `json:"ip"`
	Rounds     int                      `json:"rounds"`
	Converged  bool                     `json:"converged"`
	// StoreDefaulted: per object (Kind/name), the paths the old API server's write path (prune +
	// default) changed in what the fake client held.
	StoreDefaulted map[string][]string `json:"storeDefaulted,omitempty"`
	Error          string              `json:"error,omitempty"`
	Millis         int64               `json:"ms"`
}

// DashboardDump is what a Ray cluster's dashboard keeps across an operator restart: the Ray
// cluster itself keeps running, so its Serve applications and jobs do too.
type DashboardDump struct {
	Apps            []string       `json:"apps"`
	Jobs            int            `json:"jobs"`
	Submissions     int            `json:"submissions"`
	LastServeConfig map[string]any `json:"lastServeConfig,omitempty"`
}

// UpgradeResult is one output line of -upgrade.
type UpgradeResult struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Name string `json:"name"`
	From string `json:"from"`
	To   string `json:"to"`
	// Classification, first match wins: new-cluster (a RayCluster was created), pods-recreated (a
	// pod of a cluster that existed before was deleted or created), cluster-in-place (the spec of
	// an existing RayCluster was rewritten, no pod moved), serve-resubmitted (a Serve config was
	// sent), job-resubmitted (a Ray job was submitted again), objects-changed (the spec or data
	// of another object changed, or objects were created or deleted), annotations-only (only
	// labels or annotations of existing objects changed), untouched (at most status changes).
	Classification string `json:"classification"`
	// SchemaRead: per ray.io object, what reading it through the new CRD changed (pruned or
	// defaulted paths).
	SchemaRead map[string][]string `json:"schemaRead"`
	Clusters   struct {
		Created []string `json:"created"`
		Updated []string `json:"updated"` // spec rewritten
		Deleted []string `json:"deleted"`
	} `json:"clusters"`
	Pods struct {
		Created map[string]int `json:"created"` // "old|new/group"
		Deleted map[string]int `json:"deleted"`
	} `json:"pods"`
	// Objects: every object created, deleted or changed, by kind; a change lists its paths.
	Objects map[string]*ObjectChanges `json:"objects"`
	Hashes  []ClusterHashes           `json:"hashes"`
	Serve   struct {
		Submissions int            `json:"submissions"`
		ByCluster   map[string]int `json:"byCluster"`
		SameConfig  int            `json:"sameConfig"` // equal to the config the cluster last got
	} `json:"serve"`
	JobSubmissions int `json:"jobSubmissions"`
	Accelerators   struct {
		Before map[string]string `json:"before"`
		Peak   map[string]string `json:"peak"`
		Extra  map[string]string `json:"extra"`
	} `json:"accelerators"`
	Events    []string `json:"events"`
	Rounds    []int    `json:"rounds"`
	Converged bool     `json:"converged"`
	Errors    int      `json:"reconcileErrors"`
	LastError string   `json:"lastReconcileError,omitempty"`
	Error     string   `json:"error,omitempty"`
	Millis    int64    `json:"ms"`
}

// ObjectChanges of one kind.
type ObjectChanges struct {
	Created []string            `json:"created,omitempty"`
	Deleted []string            `json:"deleted,omitempty"`
	Changed map[string][]string `json:"changed,omitempty"` // name -> changed paths (status left out)
	Status  []string            `json:"status,omitempty"`  // names whose status alone changed
}

// ClusterHashes: one RayCluster's hash annotations and its head pod's, before and after the new
// operator ran, and the new build's hashes of the same stored specs (before it reconciled).
type ClusterHashes struct {
	Cluster    string            `json:"cluster"`
	Owner      string            `json:"owner,omitempty"` // Kind/name of the controller
	Before     map[string]string `json:"before"`          // cluster annotations
	After      map[string]string `json:"after"`           // empty: the cluster is gone
	HeadBefore map[string]string `json:"headBefore"`
	HeadAfter  map[string]string `json:"headAfter"`
	// ServiceGoal: the new build's GenerateHashWithoutReplicasAndWorkersToDelete of the owning
	// RayService's rayClusterConfig (suspend cleared), as read; compare with Before's
	// ray.io/hash-without-replicas-and-workers-to-delete, written by the old build.
	ServiceGoal      string `json:"serviceGoal,omitempty"`
	ServiceGoalInput string `json:"serviceGoalInput,omitempty"`
	// ClusterGoal: the new build's hash of the RayCluster's own spec after setDefaults (the head
	// pod's ray.io/upgrade-strategy-recreate-hash when upgradeStrategy is Recreate).
	ClusterGoal      string `json:"clusterGoal"`
	ClusterGoalInput string `json:"clusterGoalInput"`
}

// ---- the dump --------------------------------------------------------------------------------

func dumpCase(c *Case, crds map[string]*crd) (d WorldDump) {
	start := time.Now()
	d.ID, d.Kind, d.KubeRay, d.FeatureGates, d.Env = c.ID, c.Kind, utils.KUBERAY_VERSION, c.FeatureGates, c.Env
	defer func() {
		if r := recover(); r != nil {
			d.Error = fmt.Sprintf("panic: %v", r)
			if os.Getenv("CONFORMANCE_DEBUG") != "" {
				d.Error += "\n" + string(debug.Stack())
			}
			d.Objects = nil
		}
		d.Millis = time.Since(start).Milliseconds()
	}()
	api := crds[c.Kind]
	if api == nil || newObject(c.Kind) == nil || c.Before == nil {
		d.Error = "unsupported case: kind " + c.Kind + " with a before object"
		return d
	}
	restore := applySettings(c)
	defer restore()
	w := newWorld()
	w.phase = "before"
	adm := api.admit(w.ctx, c.Before, nil)
	if !adm.Accepted {
		d.Error = "the before object is rejected: " + strings.Join(adm.Errors, "; ")
		return d
	}
	// What etcd keeps and the operator reads: the storage version (ray.io/v1; a v1alpha1 write is
	// relabelled and pruned by the None conversion), defaulted with its schema.
	stored := runtime.DeepCopyJSON(adm.Stored)
	(&unstructured.Unstructured{Object: stored}).SetAPIVersion(rayv1.GroupVersion.String())
	stored, err := api.storageRoundTrip(stored, false)
	must(err)
	obj := newObject(c.Kind)
	must(runtime.DefaultUnstructuredConverter.FromUnstructured(stored, obj))
	must(w.c.Create(w.ctx, obj))
	d.Name = obj.GetName()
	d.Rounds, d.Converged = w.converge(maxRounds, true)
	d.Objects, d.StoreDefaulted = w.dumpObjects(crds)
	d.Dashboards = map[string]DashboardDump{}
	for name, db := range w.dashboards {
		dd := DashboardDump{Apps: db.apps, Jobs: db.jobs}
		for _, s := range w.submissions {
			if s.Cluster == name {
				dd.Submissions++
				dd.LastServeConfig = s.Config
			}
		}
		d.Dashboards[name] = dd
	}
	d.UID, d.IP = w.uid, w.ip
	return d
}

// listTypes: every list type of the world's scheme (client-go's groups, ray.io, the Gateway
// API), in a fixed order: the fake client holds whatever the reconcilers created, of any kind.
func (w *world) listTypes() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for gvk := range w.scheme.AllKnownTypes() {
		item := strings.TrimSuffix(gvk.Kind, "List")
		if item == gvk.Kind || item == "" || gvk.Version == runtime.APIVersionInternal || gvk.Group == "meta.k8s.io" ||
			!w.scheme.Recognizes(gvk.GroupVersion().WithKind(item)) {
			continue
		}
		out = append(out, gvk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// allObjects: every object the fake client holds, as unstructured JSON with apiVersion and kind,
// sorted by group, kind and name.
func (w *world) allObjects() []map[string]any {
	var out []map[string]any
	seen := map[string]bool{}
	for _, gvk := range w.listTypes() {
		o, err := w.scheme.New(gvk)
		if err != nil {
			continue
		}
		list, ok := o.(client.ObjectList)
		if !ok || w.c.List(w.ctx, list) != nil {
			continue
		}
		items, err := meta.ExtractList(list)
		must(err)
		for _, it := range items {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(it)
			must(err)
			u = normalJSON(u).(map[string]any)
			item := gvk.GroupVersion().WithKind(strings.TrimSuffix(gvk.Kind, "List"))
			uu := &unstructured.Unstructured{Object: u}
			uu.SetAPIVersion(item.GroupVersion().String())
			uu.SetKind(item.Kind)
			key := objectID(u)
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return objectID(out[i]) < objectID(out[j]) })
	return out
}

// objectID: group/Kind/namespace/name.
func objectID(u map[string]any) string {
	uu := unstructured.Unstructured{Object: u}
	gv, _ := schema.ParseGroupVersion(uu.GetAPIVersion())
	return gv.Group + "/" + uu.GetKind() + "/" + uu.GetNamespace() + "/" + uu.GetName()
}

// shortID: Kind/name (the namespace is always "default" here).
func shortID(u map[string]any) string {
	uu := unstructured.Unstructured{Object: u}
	return uu.GetKind() + "/" + uu.GetName()
}

// dumpObjects: every object, the ray.io ones as the old API server would have stored them.
func (w *world) dumpObjects(crds map[string]*crd) ([]map[string]any, map[string][]string) {
	objs := w.allObjects()
	changed := map[string][]string{}
	for i, u := range objs {
		c := crds[(&unstructured.Unstructured{Object: u}).GetKind()]
		if c == nil || !strings.HasPrefix((&unstructured.Unstructured{Object: u}).GetAPIVersion(), c.group+"/") {
			continue
		}
		stored, err := c.storageRoundTrip(u, false)
		must(err)
		var paths []string
		for _, p := range w.typedPaths(u, stored) {
			if p != "metadata.generation" { // the fake client's creates leave it 0 (see storageRoundTrip)
				paths = append(paths, p)
			}
		}
		if len(paths) > 0 {
			changed[shortID(u)] = paths
		}
		objs[i] = stored
	}
	return objs, changed
}

// storageRoundTrip: the object through the pruning, ObjectMeta coercion and structural defaulting
// of the CRD's version (unstructuredSchemaCoercer.apply + unstructuredDefaulter). read: the
// storage decoder's settings (dropInvalidMetadata, repairGeneration, :1280-1286); else the
// request decoder's (a write, :1194).
func (c *crd) storageRoundTrip(obj map[string]any, read bool) (map[string]any, error) {
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	gv := u.GroupVersionKind()
	v, ok := c.versions[gv.Version]
	if !ok {
		return nil, fmt.Errorf("no served version %q of %s.%s", u.GetAPIVersion(), c.kind, c.group)
	}
	kind, apiVersion := u.GetKind(), u.GetAPIVersion()
	objectMeta, foundMeta, _, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object,
		schemaobjectmeta.ObjectMetaOptions{DropMalformedFields: read})
	if err != nil {
		return nil, err
	}
	structuralpruning.PruneWithOptions(u.Object, v.structural, true, structuralschema.UnknownFieldPathOptions{})
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, v.structural)
	if fieldErr, _ := schemaobjectmeta.CoerceWithOptions(nil, u.Object, v.structural, false,
		schemaobjectmeta.CoerceOptions{DropInvalidFields: read}); fieldErr != nil {
		return nil, fieldErr
	}
	// A read repairs a missing generation (repairGeneration, :1452-1454); a create sets it to 1
	// (PrepareForCreate, registry/customresource/strategy.go:145-156), which the fake client
	// does not do for the objects the operator creates.
	if objectMeta != nil && objectMeta.Generation == 0 {
		objectMeta.Generation = 1
	}
	u.SetKind(kind)
	u.SetAPIVersion(apiVersion)
	if foundMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return nil, err
		}
	}
	structuraldefaulting.Default(u.Object, v.structural)
	return normalJSON(u.Object).(map[string]any), nil
}

// typedPaths: where two versions of an object differ once decoded into this build's Go types
// (what the operator reads): a default that only spells out a Go zero value an omitempty field
// leaves out (ttlSecondsAfterFinished: 0) is no difference.
func (w *world) typedPaths(a, b map[string]any) []string {
	typed := func(u map[string]any) any {
		o, err := w.scheme.New((&unstructured.Unstructured{Object: u}).GroupVersionKind())
		must(err)
		must(runtime.DefaultUnstructuredConverter.FromUnstructured(runtime.DeepCopyJSON(normalJSON(u).(map[string]any)), o))
		return normalJSON(o)
	}
	return jsonPaths(typed(a), typed(b), "")
}

// normalJSON: a JSON value through encoding/json (numbers float64), so that values from the
// API machinery (int64) and from a JSON line compare equal.
func normalJSON(v any) any {
	data, err := json.Marshal(v)
	must(err)
	var out any
	must(json.Unmarshal(data, &out))
	return out
}

// jsonPaths: the paths where two JSON values differ ("spec.headGroupSpec.template",
// "metadata.annotations[ray.io/hash]", "spec.workerGroupSpecs[0].replicas"), sorted.
func jsonPaths(a, b any, path string) []string {
	if reflect.DeepEqual(a, b) {
		return nil
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		var out []string
		for _, k := range sortedKeys(keys) {
			child := path + "." + k
			if path == "" {
				child = k
			} else if strings.HasSuffix(path, "annotations") || strings.HasSuffix(path, "labels") ||
				strings.ContainsAny(k, "./") {
				child = path + "[" + k + "]"
			}
			out = append(out, jsonPaths(am[k], bm[k], child)...)
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, jsonPaths(al[i], bl[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	}
	return []string{path}
}

// ---- the load and the run ---------------------------------------------------------------------

func runUpgrade(d *WorldDump, crds map[string]*crd) (res UpgradeResult) {
	start := time.Now()
	res.ID, res.Kind, res.Name, res.From, res.To = d.ID, d.Kind, d.Name, d.KubeRay, utils.KUBERAY_VERSION
	res.SchemaRead = map[string][]string{}
	res.Objects = map[string]*ObjectChanges{}
	res.Serve.ByCluster = map[string]int{}
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
	if d.Error != "" {
		res.Error = "the dump failed: " + d.Error
		return res
	}
	restore := applySettings(&Case{FeatureGates: d.FeatureGates, Env: d.Env})
	defer restore()
	w := newWorld()
	w.phase = "load"
	w.uid, w.ip = d.UID, d.IP
	w.restoring = true
	for _, u := range d.Objects {
		uu := &unstructured.Unstructured{Object: u}
		if c := crds[uu.GetKind()]; c != nil && strings.HasPrefix(uu.GetAPIVersion(), c.group+"/") {
			read, err := c.storageRoundTrip(u, true)
			must(err)
			if paths := w.typedPaths(u, read); len(paths) > 0 {
				res.SchemaRead[shortID(u)] = paths
			}
			u = read
		}
		obj, err := w.scheme.New(uu.GroupVersionKind())
		must(err)
		must(runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj))
		co := obj.(client.Object)
		co.SetResourceVersion("")
		if err := w.c.Create(w.ctx, co); err != nil {
			panic(fmt.Sprintf("load %s: %v", shortID(u), err))
		}
	}
	w.restoring = false
	for name, dd := range d.Dashboards {
		w.dashboards[name] = &dashboard{w: w, cluster: name, apps: dd.Apps, jobs: dd.Jobs}
	}
	w.observe()
	before := w.allObjects()
	beforeSnap := w.snapshot(d.Kind, d.Name)

	// The new operator: converge with the old clusters' deletion delay running (the peak), then
	// fast-forwarded (the end state), as a normal case's "after" phase.
	w.phase = "after"
	n, ok := w.converge(maxRounds, false)
	w.phase = "settle"
	w.fastForward()
	n2, ok2 := w.converge(maxRounds, true)
	res.Rounds, res.Converged = []int{n, n2}, ok && ok2
	after := w.allObjects()
	afterSnap := w.snapshot(d.Kind, d.Name)

	w.upgradeReadBack(&res, d, before, after, beforeSnap, afterSnap)
	for k, v := range w.errors {
		if k != "load" {
			res.Errors += v
		}
	}
	res.LastError = w.lastErr
	return res
}

func (w *world) upgradeReadBack(res *UpgradeResult, d *WorldDump, before, after []map[string]any, bs, as *snapshot) {
	existed := map[string]bool{}
	for name := range bs.clusters {
		existed[name] = true
	}
	role := func(cluster string) string {
		if existed[cluster] {
			return "old"
		}
		return "new"
	}
	podsOfSurvivors := 0
	for _, ch := range w.log {
		if ch.Phase == "load" {
			continue
		}
		switch {
		case ch.Kind == "RayCluster" && ch.Verb == "created":
			res.Clusters.Created = appendOnce(res.Clusters.Created, ch.Name)
		case ch.Kind == "RayCluster" && ch.Verb == "updated" && existed[ch.Name]:
			res.Clusters.Updated = appendOnce(res.Clusters.Updated, ch.Name)
		case ch.Kind == "RayCluster" && ch.Verb == "deleted":
			res.Clusters.Deleted = appendOnce(res.Clusters.Deleted, ch.Name)
		case ch.Kind == "Pod" && ch.Verb == "created":
			res.Pods.Created[role(ch.Cluster)+"/"+ch.Group]++
		case ch.Kind == "Pod" && ch.Verb == "deleted":
			res.Pods.Deleted[role(ch.Cluster)+"/"+ch.Group]++
		}
		if ch.Kind == "Pod" && existed[ch.Cluster] && as.clusters[ch.Cluster] != nil {
			podsOfSurvivors++
		}
	}

	// Every object, by identity (a name reused by a new object is a delete and a create).
	type state struct {
		uid string
		obj map[string]any
	}
	index := func(list []map[string]any) map[string]state {
		out := map[string]state{}
		for _, u := range list {
			out[objectID(u)] = state{uid: string((&unstructured.Unstructured{Object: u}).GetUID()),
				obj: stripVolatile(normalJSON(u)).(map[string]any)}
		}
		return out
	}
	b, a := index(before), index(after)
	changes := func(u map[string]any) *ObjectChanges {
		kind := (&unstructured.Unstructured{Object: u}).GetKind()
		if res.Objects[kind] == nil {
			res.Objects[kind] = &ObjectChanges{}
		}
		return res.Objects[kind]
	}
	metadataOnly, otherChange, objectsMoved := false, false, false
	for _, id := range sortedKeys(b) {
		old := b[id]
		cur, ok := a[id]
		name := (&unstructured.Unstructured{Object: old.obj}).GetName()
		if !ok || cur.uid != old.uid {
			changes(old.obj).Deleted = append(changes(old.obj).Deleted, name)
			objectsMoved = true
			continue
		}
		paths := jsonPaths(withoutKey(old.obj, "status"), withoutKey(cur.obj, "status"), "")
		if len(paths) == 0 {
			if !reflect.DeepEqual(old.obj["status"], cur.obj["status"]) {
				changes(old.obj).Status = append(changes(old.obj).Status, name)
			}
			continue
		}
		ch := changes(old.obj)
		if ch.Changed == nil {
			ch.Changed = map[string][]string{}
		}
		ch.Changed[name] = paths
		for _, p := range paths {
			if strings.HasPrefix(p, "metadata.annotations") || strings.HasPrefix(p, "metadata.labels") {
				metadataOnly = true
			} else {
				otherChange = true
			}
		}
	}
	for _, id := range sortedKeys(a) {
		cur := a[id]
		if old, ok := b[id]; !ok || old.uid != cur.uid {
			changes(cur.obj).Created = append(changes(cur.obj).Created, (&unstructured.Unstructured{Object: cur.obj}).GetName())
			objectsMoved = true
		}
	}

	// Serve submissions since the load, and whether each repeats the cluster's last config.
	for _, s := range w.submissions {
		if s.Phase == "load" {
			continue
		}
		res.Serve.Submissions++
		res.Serve.ByCluster[role(s.Cluster)+"/"+s.Cluster]++
		if last := d.Dashboards[s.Cluster].LastServeConfig; last != nil && reflect.DeepEqual(normalJSON(last), normalJSON(s.Config)) {
			res.Serve.SameConfig++
		}
	}
	res.JobSubmissions = len(w.jobSubmissions)

	// Hashes.
	for _, name := range sortedKeys(bs.clusters) {
		c := bs.clusters[name]
		h := ClusterHashes{Cluster: name, Before: clusterAnnotations(c), After: clusterAnnotations(as.clusters[name]),
			HeadBefore: headAnnotations(bs.heads[name]), HeadAfter: headAnnotations(as.heads[name])}
		if ref := metav1ControllerOf(c); ref != "" {
			h.Owner = ref
		}
		if rs, ok := bs.obj.(*rayv1.RayService); ok && strings.HasPrefix(h.Owner, "RayService/") {
			spec := rs.Spec.RayClusterSpec.DeepCopy()
			spec.Suspend = nil
			h.ServiceGoal, h.ServiceGoalInput = goalHash(*spec)
		}
		spec := c.Spec.DeepCopy()
		if spec.HeadGroupSpec.RayStartParams == nil {
			spec.HeadGroupSpec.RayStartParams = map[string]string{}
		}
		for i := range spec.WorkerGroupSpecs {
			if spec.WorkerGroupSpecs[i].RayStartParams == nil {
				spec.WorkerGroupSpecs[i].RayStartParams = map[string]string{}
			}
		}
		h.ClusterGoal, h.ClusterGoalInput = goalHash(*spec)
		res.Hashes = append(res.Hashes, h)
	}

	// Accelerators: the total when loaded, the peak while the new operator ran.
	res.Accelerators.Before, res.Accelerators.Peak, res.Accelerators.Extra = map[string]string{}, map[string]string{}, map[string]string{}
	peak := map[string]int64{}
	for k, v := range bs.totals {
		peak[k] = v
		res.Accelerators.Before[k] = milliString(v)
	}
	for _, phase := range []string{"after", "settle"} {
		for k, v := range w.peak[phase] {
			if v > peak[k] {
				peak[k] = v
			}
		}
	}
	for k, v := range peak {
		res.Accelerators.Peak[k] = milliString(v)
		if v > bs.totals[k] {
			res.Accelerators.Extra[k] = milliString(v - bs.totals[k])
		}
	}
	seen := map[string]bool{}
	for _, e := range w.events {
		if e.Phase != "load" && !seen[e.Reason] {
			seen[e.Reason] = true
			res.Events = append(res.Events, e.Reason)
		}
	}

	// What KubeRay v1.7.0 does with v1.6.2's objects (scripts/conformance.py upgrade, README.md):
	//  - RayService: the active cluster's ray.io/kuberay-version is not v1.7.0, so shouldUpdateCluster
	//    says update (rayservice_controller.go:1363-1367) and reconcileRayCluster rewrites the
	//    cluster in place from the RayService's spec (:1221-1233, modifyRayCluster :1442-1470:
	//    spec, labels and annotations replaced, the hash and version annotations the new ones).
	//    That runs before shouldPrepareNewCluster compares hashes (:244), so the hash of the same
	//    stored spec changing (v1.7.0's worker-group `priority`, defaulted to 0 on read and
	//    hashed) never builds a new cluster. Pods keep v1.6.2's annotations.
	//  - With an incremental-upgrade strategy (the RayServiceIncrementalUpgrade gate is off by
	//    default in v1.6.2, on in v1.7.0), constructRayClusterForRayService clears the worker
	//    groups' replicas whenever an active cluster exists (:1523-1531), the in-place rewrite of
	//    the active cluster included; the Gateway, HTTPRoute and per-cluster Serve Service appear.
	//  - RayCluster with upgradeStrategy Recreate: the head pod's version differs, so its hash and
	//    version annotations are rewritten and no pod is recreated (raycluster_controller.go:
	//    1481-1494). Without Recreate nothing reads them.
	//  - Serve: the submitted-config cache lives in the reconciler's memory (rayservice_controller.go:
	//    61, :1896-1925), empty after any restart, so every Serve config is sent once more,
	//    unchanged ("Nothing has been cached", :1551-1555): a restart does the same.
	switch {
	case len(res.Clusters.Created) > 0:
		res.Classification = "new-cluster"
	case podsOfSurvivors > 0:
		res.Classification = "pods-recreated"
	case len(res.Clusters.Updated) > 0:
		res.Classification = "cluster-in-place"
	case res.Serve.Submissions > 0:
		res.Classification = "serve-resubmitted"
	case res.JobSubmissions > 0:
		res.Classification = "job-resubmitted"
	case otherChange || objectsMoved:
		res.Classification = "objects-changed"
	case metadataOnly:
		res.Classification = "annotations-only"
	default:
		res.Classification = "untouched"
	}
}

// metav1ControllerOf: Kind/name of the object's controller, if any.
func metav1ControllerOf(o client.Object) string {
	for _, ref := range o.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return ref.Kind + "/" + ref.Name
		}
	}
	return ""
}

// upgradeLine answers one input line of -dump-world (a case: its world) or -upgrade (a world:
// what this build's operator does with it).
func upgradeLine(line []byte, upgrade bool, crds map[string]*crd) any {
	if upgrade {
		var d WorldDump
		if err := json.Unmarshal(line, &d); err != nil {
			return UpgradeResult{ID: d.ID, Error: "bad world: " + err.Error()}
		}
		return runUpgrade(&d, crds)
	}
	var c Case
	if err := json.Unmarshal(line, &c); err != nil {
		return WorldDump{ID: c.ID, Error: "bad case: " + err.Error()}
	}
	if c.Version != "" && "v"+c.Version != utils.KUBERAY_VERSION {
		return WorldDump{ID: c.ID, Kind: c.Kind, Error: "this build is KubeRay " + utils.KUBERAY_VERSION + ", the case asks for " + c.Version}
	}
	return dumpCase(&c, crds)
}
