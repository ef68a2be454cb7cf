package main

// The world one case runs in: controller-runtime's fake client, KubeRay's three reconcilers built
// through their exported constructors and a stub manager (option (b) of conformance-design.md),
// a recording Ray dashboard, and small stand-ins for what a real cluster adds: the kubelet (pods
// Running/Ready with an IP), Service ClusterIPs, EndpointSlices, garbage collection, and a Gateway
// controller. Everything is driven in rounds until a fixpoint.

import (
	"context"
	"crypto/sha1" //nolint:gosec // a fingerprint, not security
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils/dashboardclient"
	utiltypes "github.com/ray-project/kuberay/ray-operator/controllers/ray/utils/types"
)

const namespace = "default"

func newScheme() *runtime.Scheme {
	// The operator's scheme (main.go:197-199): client-go's (core, batch, discovery, rbac, ...),
	// ray.io/v1 and the Gateway API.
	s := runtime.NewScheme()
	must(clientgoscheme.AddToScheme(s))
	must(rayv1.AddToScheme(s))
	must(gwv1.Install(s))
	return s
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// ---- events ------------------------------------------------------------------------------

// Event is one event an operator recorded.
type Event struct {
	Object string `json:"object"` // Kind/name
	Type   string `json:"type"`
	Reason string `json:"reason"`
	Note   string `json:"note"`
	Phase  string `json:"phase"`
}

// recorder keeps every event (events.FakeRecorder blocks when its channel is full).
type recorder struct{ w *world }

func (r recorder) Eventf(regarding runtime.Object, _ runtime.Object, eventtype, reason, _ string, note string, args ...any) {
	r.w.events = append(r.w.events, Event{Object: objectKey(regarding), Type: eventtype, Reason: reason,
		Note: fmt.Sprintf(note, args...), Phase: r.w.phase})
}

func objectKey(o runtime.Object) string {
	kind := fmt.Sprintf("%T", o)
	kind = kind[strings.LastIndex(kind, ".")+1:]
	if m, err := meta.Accessor(o); err == nil {
		return kind + "/" + m.GetName()
	}
	return kind
}

// ---- the manager stub and client provider -------------------------------------------------

// stubManager is all NewRayServiceReconciler / NewReconciler / NewRayJobReconciler read from a
// manager: GetClient, GetScheme, GetEventRecorder (rayservice_controller.go:68-81,
// raycluster_controller.go:56-64, rayjob_controller.go:58-67). Any other call panics (nil embed).
type stubManager struct {
	manager.Manager
	c      client.Client
	scheme *runtime.Scheme
	rec    events.EventRecorder
}

func (m stubManager) GetClient() client.Client                     { return m.c }
func (m stubManager) GetScheme() *runtime.Scheme                   { return m.scheme }
func (m stubManager) GetEventRecorder(string) events.EventRecorder { return m.rec }

// provider implements utils.ClientProvider (utils/util.go:739-742).
type provider struct{ w *world }

func (p provider) GetDashboardClient(context.Context, manager.Manager) func(*rayv1.RayCluster, string) (dashboardclient.RayDashboardClientInterface, error) {
	return func(rc *rayv1.RayCluster, _ string) (dashboardclient.RayDashboardClientInterface, error) {
		name := ""
		if rc != nil {
			name = rc.Name
		}
		d, ok := p.w.dashboards[name]
		if !ok {
			d = &dashboard{w: p.w, cluster: name}
			p.w.dashboards[name] = d
		}
		return d, nil
	}
}

func (p provider) GetHttpProxyClient(manager.Manager) func(string, string, string, int) utils.RayHttpProxyClientInterface {
	return func(string, string, string, int) utils.RayHttpProxyClientInterface { return healthyProxy{} }
}

type healthyProxy struct{}

func (healthyProxy) CheckProxyActorHealth(context.Context) error { return nil }

// Submission is one UpdateDeployments call: a Serve config sent to a cluster.
type Submission struct {
	Cluster string         `json:"cluster"`
	Phase   string         `json:"phase"`
	Config  map[string]any `json:"-"`
}

// dashboard is a recording Ray dashboard for one cluster: every submitted Serve application
// reports RUNNING at once (so a pending cluster is promoted, rayservice_controller.go:1858-1893),
// and every Ray job RUNNING.
type dashboard struct {
	w       *world
	cluster string
	apps    []string
	jobs    int
}

var _ dashboardclient.RayDashboardClientInterface = (*dashboard)(nil)

func (d *dashboard) UpdateDeployments(_ context.Context, config []byte) error {
	var cfg map[string]any
	if err := json.Unmarshal(config, &cfg); err != nil {
		return err
	}
	d.apps = nil
	if list, ok := cfg["applications"].([]any); ok {
		for _, a := range list {
			if m, ok := a.(map[string]any); ok {
				name, _ := m["name"].(string)
				d.apps = append(d.apps, name)
			}
		}
	}
	d.w.submissions = append(d.w.submissions, Submission{Cluster: d.cluster, Phase: d.w.phase, Config: cfg})
	return nil
}

func (d *dashboard) GetServeDetails(context.Context) (*utiltypes.ServeDetails, error) {
	return &utiltypes.ServeDetails{}, nil
}

func (d *dashboard) GetMultiApplicationStatus(context.Context) (map[string]*utiltypes.ServeApplicationStatus, error) {
	out := map[string]*utiltypes.ServeApplicationStatus{}
	for _, name := range d.apps {
		out[name] = &utiltypes.ServeApplicationStatus{Name: name, Status: rayv1.ApplicationStatusEnum.RUNNING,
			Deployments: map[string]utiltypes.ServeDeploymentStatus{}}
	}
	return out, nil
}

func (d *dashboard) GetJobInfo(context.Context, string) (*utiltypes.RayJobInfo, error) {
	return &utiltypes.RayJobInfo{JobStatus: rayv1.JobStatusRunning}, nil
}
func (d *dashboard) ListJobs(context.Context) (*[]utiltypes.RayJobInfo, error) {
	return &[]utiltypes.RayJobInfo{}, nil
}
func (d *dashboard) SubmitJob(_ context.Context, j *rayv1.RayJob) (string, error) {
	d.jobs++
	data, _ := json.Marshal(j.Spec)
	d.w.jobSubmissions = append(d.w.jobSubmissions, "submit "+string(data))
	return j.Status.JobId, nil
}
func (d *dashboard) SubmitJobReq(_ context.Context, r *utiltypes.RayJobRequest) (string, error) {
	d.jobs++
	data, _ := json.Marshal(r)
	d.w.jobSubmissions = append(d.w.jobSubmissions, "submit "+string(data))
	return r.SubmissionId, nil
}
func (d *dashboard) GetJobLog(context.Context, string) (*string, error) { return ptr.To(""), nil }
func (d *dashboard) StopJob(context.Context, string) error              { d.w.stopJobs++; return nil }
func (d *dashboard) DeleteJob(context.Context, string) error            { return nil }

// ---- the world -----------------------------------------------------------------------------

type world struct {
	ctx    context.Context
	scheme *runtime.Scheme
	c      client.Client
	rs     *ray.RayServiceReconciler
	rc     *ray.RayClusterReconciler
	rj     *ray.RayJobReconciler

	phase          string // "before", "after", "settle": stamped on everything recorded
	events         []Event
	submissions    []Submission
	dashboards     map[string]*dashboard
	jobSubmissions []string // RayJob submissions through the dashboard (HTTPMode), as JSON
	stopJobs       int      // StopJob calls (a deleted RayJob's finalizer, scenario.go)
	log            []Change
	errors         map[string]int // reconcile errors by phase
	lastErr        string
	allErrors      []string
	uid            int
	ip             int
	restoring      bool // upgrade.go is loading a dumped world: creation timestamps are kept

	// what was seen at the end of the last step: RayClusters and pods by UID
	seenClusters map[types.UID]clusterSeen
	seenPods     map[types.UID]podSeen
	peak         map[string]map[string]int64 // phase -> extended resource -> peak total (milli-units)
}

type clusterSeen struct {
	name, spec string
}

type podSeen struct {
	name, cluster, group string
	res                  map[string]int64
}

// Change is one observed change of a RayCluster or pod.
type Change struct {
	Phase   string `json:"phase"`
	Verb    string `json:"verb"` // created, deleted, updated
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Cluster string `json:"cluster,omitempty"`
	Group   string `json:"group,omitempty"`
}

func newWorld() *world {
	w := &world{ctx: ctrl.LoggerInto(context.Background(), discardLogger()), scheme: newScheme(),
		dashboards: map[string]*dashboard{}, errors: map[string]int{}, seenClusters: map[types.UID]clusterSeen{},
		seenPods: map[types.UID]podSeen{}, peak: map[string]map[string]int64{}}
	// Status subresources (pitfall 1): without them Status().Update returns NotFound.
	// The plain object tracker: the default field-managed one rebuilds a REST mapper on every
	// update (a third of the run time) for managed fields nobody here reads (KubeRay never
	// server-side applies).
	tracker := clienttesting.NewObjectTracker(w.scheme, serializer.NewCodecFactory(w.scheme).UniversalDecoder())
	w.c = fake.NewClientBuilder().WithScheme(w.scheme).WithObjectTracker(tracker).
		WithStatusSubresource(&rayv1.RayService{}, &rayv1.RayCluster{}, &rayv1.RayJob{}, &gwv1.Gateway{}, &gwv1.HTTPRoute{}).
		WithInterceptorFuncs(interceptor.Funcs{Create: w.stampCreate}).
		Build()
	mgr := stubManager{c: w.c, scheme: w.scheme, rec: recorder{w}}
	w.rs = ray.NewRayServiceReconciler(w.ctx, mgr, provider{w})
	w.rc = newClusterReconciler(w.ctx, mgr)
	w.rj = ray.NewRayJobReconciler(w.ctx, mgr, ray.RayJobReconcilerOptions{}, provider{w})
	return w
}

// stampCreate gives every new object what the API server would: a UID (EndpointSlice dedup and
// ownerReferences use it, rayservice_controller.go:2153) and a creation timestamp (pitfall 2).
func (w *world) stampCreate(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
	w.uid++
	if obj.GetUID() == "" {
		obj.SetUID(types.UID(fmt.Sprintf("uid-%06d", w.uid)))
	}
	if ts := obj.GetCreationTimestamp(); !w.restoring || ts.IsZero() {
		obj.SetCreationTimestamp(metav1.Now())
	}
	return c.Create(ctx, obj, opts...)
}

// ---- one round -----------------------------------------------------------------------------

func (w *world) reconcileAll() {
	var services rayv1.RayServiceList
	var jobs rayv1.RayJobList
	var clusters rayv1.RayClusterList
	must(w.c.List(w.ctx, &services))
	for _, s := range services.Items {
		w.call(w.rs.Reconcile(w.ctx, request(s.Name)))
	}
	must(w.c.List(w.ctx, &jobs))
	for _, j := range jobs.Items {
		w.call(w.rj.Reconcile(w.ctx, request(j.Name)))
	}
	must(w.c.List(w.ctx, &clusters))
	for _, c := range clusters.Items {
		w.call(w.rc.Reconcile(w.ctx, request(c.Name)))
		w.observe()
	}
}

func request(name string) ctrl.Request {
	return ctrl.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}
}

func (w *world) call(_ ctrl.Result, err error) {
	// Reconcile errors are part of normal transitions (e.g. "found 0 head" before the head pod
	// exists, rayservice_controller.go:2087-2089): counted, not fatal.
	if err != nil {
		w.errors[w.phase]++
		w.lastErr = err.Error()
		if len(w.allErrors) < 50 {
			w.allErrors = append(w.allErrors, w.phase+": "+err.Error())
		}
	}
	w.observe()
}

// kubelet: every pod runs and is ready, with an IP (pitfall 3).
func (w *world) kubelet() {
	var pods corev1.PodList
	must(w.c.List(w.ctx, &pods))
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodRunning || !p.DeletionTimestamp.IsZero() {
			continue
		}
		w.ip++
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = fmt.Sprintf("10.0.%d.%d", w.ip/250, w.ip%250+1)
		now := metav1.Now()
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Ready: true, Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
		}
		// Pods have a status subresource in the fake client (in-tree types always do).
		must(w.c.Status().Update(w.ctx, p))
	}
}

// services: a ClusterIP for every non-headless Service (pitfall 4), and one EndpointSlice per
// Service listing its ready pods (pitfall 5).
func (w *world) services() {
	var svcs corev1.ServiceList
	var pods corev1.PodList
	must(w.c.List(w.ctx, &svcs))
	must(w.c.List(w.ctx, &pods))
	for i := range svcs.Items {
		s := &svcs.Items[i]
		if s.Spec.ClusterIP == "" {
			w.ip++
			s.Spec.ClusterIP = fmt.Sprintf("10.96.%d.%d", w.ip/250, w.ip%250+1)
			must(w.c.Update(w.ctx, s))
		}
		if len(s.Spec.Selector) == 0 {
			continue
		}
		slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: s.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: s.Name, UID: s.UID,
				Controller: ptr.To(true)}}},
			AddressType: discoveryv1.AddressTypeIPv4}
		for _, p := range pods.Items {
			if !matches(s.Spec.Selector, p.Labels) || p.Status.PodIP == "" {
				continue
			}
			slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{p.Status.PodIP},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: p.Name, Namespace: namespace, UID: p.UID}})
		}
		var cur discoveryv1.EndpointSlice
		err := w.c.Get(w.ctx, client.ObjectKeyFromObject(slice), &cur)
		if err != nil {
			must(w.c.Create(w.ctx, slice))
		} else if fmt.Sprint(cur.Endpoints) != fmt.Sprint(slice.Endpoints) {
			cur.Endpoints = slice.Endpoints
			must(w.c.Update(w.ctx, &cur))
		}
	}
}

func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// gateways: a Gateway controller that accepts and programs every Gateway and HTTPRoute
// (utils.IsGatewayReady / IsHTTPRouteReady, utils/util.go:874-915). Only incremental upgrades
// create them.
func (w *world) gateways() {
	var gws gwv1.GatewayList
	var routes gwv1.HTTPRouteList
	must(w.c.List(w.ctx, &gws))
	for i := range gws.Items {
		g := &gws.Items[i]
		if utils.IsGatewayReady(g) {
			continue
		}
		meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: string(gwv1.GatewayConditionAccepted), Status: metav1.ConditionTrue, Reason: "Accepted"})
		meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: string(gwv1.GatewayConditionProgrammed), Status: metav1.ConditionTrue, Reason: "Programmed"})
		must(w.c.Status().Update(w.ctx, g))
	}
	must(w.c.List(w.ctx, &routes))
	for i := range routes.Items {
		r := &routes.Items[i]
		want := []gwv1.RouteParentStatus{}
		for _, ref := range r.Spec.ParentRefs {
			ps := gwv1.RouteParentStatus{ParentRef: ref, ControllerName: "conformance/gateway"}
			meta.SetStatusCondition(&ps.Conditions, metav1.Condition{Type: string(gwv1.RouteConditionAccepted), Status: metav1.ConditionTrue, Reason: "Accepted"})
			meta.SetStatusCondition(&ps.Conditions, metav1.Condition{Type: string(gwv1.RouteConditionResolvedRefs), Status: metav1.ConditionTrue, Reason: "ResolvedRefs"})
			want = append(want, ps)
		}
		if len(r.Status.Parents) == len(want) {
			continue
		}
		r.Status.Parents = want
		must(w.c.Status().Update(w.ctx, r))
	}
}

// jobs: the Redis cleanup Job of a deleted GCS FT cluster runs to completion (Redis is assumed
// reachable), so the cluster's cleanup finalizer is released (raycluster_controller.go:303-333).
// Other Jobs (RayJob submitters) keep running: the Ray job never finishes here.
func (w *world) jobs() {
	var list batchv1.JobList
	must(w.c.List(w.ctx, &list, client.MatchingLabels{utils.RayNodeTypeLabelKey: string(rayv1.RedisCleanupNode)}))
	for i := range list.Items {
		j := &list.Items[i]
		if _, done := utils.IsJobFinished(j); done {
			continue
		}
		now := metav1.Now()
		j.Status.StartTime, j.Status.CompletionTime, j.Status.Succeeded = &now, &now, 1
		j.Status.Conditions = append(j.Status.Conditions,
			batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now})
		must(w.c.Status().Update(w.ctx, j))
	}
}

// gc deletes objects whose owner is gone (the fake client does not garbage-collect: pitfall 2).
func (w *world) gc() {
	for {
		alive := map[types.UID]bool{}
		var all []client.Object
		for _, list := range []client.ObjectList{&rayv1.RayServiceList{}, &rayv1.RayJobList{}, &rayv1.RayClusterList{},
			&corev1.PodList{}, &corev1.ServiceList{}, &discoveryv1.EndpointSliceList{}, &batchv1.JobList{},
			&corev1.ServiceAccountList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{}, &gwv1.GatewayList{},
			&gwv1.HTTPRouteList{}, &corev1.SecretList{}} {
			must(w.c.List(w.ctx, list))
			items, err := meta.ExtractList(list)
			must(err)
			for _, it := range items {
				o := it.(client.Object)
				alive[o.GetUID()] = true
				all = append(all, o)
			}
		}
		deleted := false
		for _, o := range all {
			for _, ref := range o.GetOwnerReferences() {
				if !alive[ref.UID] {
					if err := w.c.Delete(w.ctx, o); err == nil {
						deleted = true
					}
					break
				}
			}
		}
		if !deleted {
			return
		}
	}
}

func (w *world) round() {
	w.reconcileAll()
	w.kubelet()
	w.services()
	w.gateways()
	w.jobs()
	w.gc()
	w.observe()
}

// fastForward makes every scheduled RayCluster deletion due now (the 60 s delay,
// rayservice_controller.go:48, 1267-1300) through the reconciler's exported map.
func (w *world) fastForward() {
	for k := range w.rs.RayClusterDeletionTimestamps.Items() {
		w.rs.RayClusterDeletionTimestamps.Set(k, time.Now().Add(-time.Second))
	}
}

// converge runs rounds until the world's fingerprint stays the same for two rounds.
func (w *world) converge(maxRounds int, fastForward bool) (int, bool) {
	prev, stable := "", 0
	for i := 1; i <= maxRounds; i++ {
		w.round()
		if fastForward {
			w.fastForward()
		}
		fp := w.fingerprint()
		if fp == prev {
			stable++
			if stable >= 2 {
				return i, true
			}
		} else {
			stable = 0
		}
		prev = fp
	}
	return maxRounds, false
}

// fingerprint: every object with its volatile fields (resourceVersion, times) left out, plus the
// number of Serve submissions (a re-submission every pass is not a fixpoint).
func (w *world) fingerprint() string {
	h := sha1.New() //nolint:gosec
	for _, list := range []client.ObjectList{&rayv1.RayServiceList{}, &rayv1.RayJobList{}, &rayv1.RayClusterList{},
		&corev1.PodList{}, &corev1.ServiceList{}, &batchv1.JobList{}, &gwv1.GatewayList{}, &gwv1.HTTPRouteList{}} {
		must(w.c.List(w.ctx, list))
		data, err := json.Marshal(list)
		must(err)
		var v any
		must(json.Unmarshal(data, &v))
		data, _ = json.Marshal(stripVolatile(v))
		h.Write(data)
	}
	fmt.Fprintf(h, "submissions=%d", len(w.submissions))
	return fmt.Sprintf("%x", h.Sum(nil))
}

func stripVolatile(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k := range t {
			if k == "resourceVersion" || k == "managedFields" || strings.HasSuffix(k, "Time") ||
				strings.HasSuffix(k, "Timestamp") || strings.HasSuffix(k, "Times") || k == "observedGeneration" {
				delete(t, k)
				continue
			}
			t[k] = stripVolatile(t[k])
		}
	case []any:
		for i := range t {
			t[i] = stripVolatile(t[i])
		}
	}
	return v
}

// observe records what changed since the last look: RayClusters created, updated (spec) or
// deleted, pods created or deleted per group, and the running total of every extended resource.
func (w *world) observe() {
	var clusters rayv1.RayClusterList
	var pods corev1.PodList
	must(w.c.List(w.ctx, &clusters))
	must(w.c.List(w.ctx, &pods))
	now := map[types.UID]clusterSeen{}
	for _, c := range clusters.Items {
		spec, _ := json.Marshal(c.Spec)
		seen := clusterSeen{name: c.Name, spec: string(spec)}
		now[c.UID] = seen
		if old, ok := w.seenClusters[c.UID]; !ok {
			w.log = append(w.log, Change{Phase: w.phase, Verb: "created", Kind: "RayCluster", Name: c.Name})
		} else if old.spec != seen.spec {
			w.log = append(w.log, Change{Phase: w.phase, Verb: "updated", Kind: "RayCluster", Name: c.Name})
		}
	}
	for uid, old := range w.seenClusters {
		if _, ok := now[uid]; !ok {
			w.log = append(w.log, Change{Phase: w.phase, Verb: "deleted", Kind: "RayCluster", Name: old.name})
		}
	}
	w.seenClusters = now
	nowPods := map[types.UID]podSeen{}
	total := map[string]int64{}
	for _, p := range pods.Items {
		seen, ok := w.seenPods[p.UID]
		if !ok {
			seen = podSeen{name: p.Name, cluster: p.Labels[utils.RayClusterLabelKey], group: p.Labels[utils.RayNodeGroupLabelKey],
				res: podResources(&p)}
			w.log = append(w.log, Change{Phase: w.phase, Verb: "created", Kind: "Pod", Name: p.Name, Cluster: seen.cluster, Group: seen.group})
		}
		nowPods[p.UID] = seen
		for k, v := range seen.res {
			total[k] += v
		}
	}
	for uid, old := range w.seenPods {
		if _, ok := nowPods[uid]; !ok {
			w.log = append(w.log, Change{Phase: w.phase, Verb: "deleted", Kind: "Pod", Name: old.name, Cluster: old.cluster, Group: old.group})
		}
	}
	w.seenPods = nowPods
	peak := w.peak[w.phase]
	if peak == nil {
		peak = map[string]int64{}
		w.peak[w.phase] = peak
	}
	for k, v := range total {
		if v > peak[k] {
			peak[k] = v
		}
	}
}

// podResources: what the scheduler reserves for a pod, per extended resource (every resource
// name with a "/": nvidia.com/gpu, google.com/tpu, ...), in milli-units: the sum over containers
// of requests (a limit stands for a missing request, as core/v1 defaulting does), or the largest
// init container if that is more. Core defaulting itself is not run (k8s.io/kubernetes).
func podResources(p *corev1.Pod) map[string]int64 {
	out := map[string]int64{}
	get := func(c corev1.Container) map[string]int64 {
		m := map[string]int64{}
		for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			for k, v := range list {
				if strings.Contains(string(k), "/") {
					m[string(k)] = v.MilliValue()
				}
			}
		}
		return m
	}
	for _, c := range p.Spec.Containers {
		for k, v := range get(c) {
			out[k] += v
		}
	}
	for _, c := range p.Spec.InitContainers {
		for k, v := range get(c) {
			if v > out[k] {
				out[k] = v
			}
		}
	}
	return out
}

// ---- small helpers -------------------------------------------------------------------------

func milliString(v int64) string {
	if v%1000 == 0 {
		return strconv.FormatInt(v/1000, 10)
	}
	return resource.NewMilliQuantity(v, resource.DecimalSI).String()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
