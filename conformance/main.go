// Command conformance runs KubeRay's own reconcilers (v1.7.0; v1.6.2 with -tags kuberay_v1_6,
// see kuberay_v1_6.go) on cases read as JSON lines and writes one JSON result per case: what
// the API server and the operator really do with a change of a RayService, RayCluster or
// RayJob. See README.md.
//
//	conformance -crds DIR [cases.jsonl ...]   (no file: standard input)
//	conformance -crds DIR -dump-world [cases.jsonl ...]    one world per case (upgrade.go)
//	conformance -crds DIR -upgrade [worlds.jsonl ...]      one upgrade result per world
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"

	"github.com/go-logr/logr"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
)

func discardLogger() logr.Logger { return logr.Discard() }

var gateDefaults = map[string]bool{}

// operatorEnv: the operator's environment variables a case may set (conformance-design.md §5).
var operatorEnv = []string{"ENABLE_ZERO_DOWNTIME", "ENABLE_RANDOM_POD_DELETE", "ENABLE_GCS_FT_REDIS_CLEANUP",
	"ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE", "ENABLE_DETERMINISTIC_HEAD_POD_NAME", "ENABLE_INIT_CONTAINER_INJECTION"}

// applySettings sets the case's feature gates (as main.go does from --feature-gates) and
// operator environment; both are process-global, so cases run one at a time.
func applySettings(c *Case) func() {
	gates := map[string]bool{}
	for name, def := range gateDefaults {
		gates[name] = def
	}
	for name, v := range c.FeatureGates {
		if _, known := gateDefaults[name]; !known {
			panic("unknown feature gate " + name)
		}
		gates[name] = v
	}
	must(utilfeature.DefaultMutableFeatureGate.SetFromMap(gates))
	for _, k := range operatorEnv {
		os.Unsetenv(k)
	}
	for k, v := range c.Env {
		os.Setenv(k, v)
	}
	return func() {
		for k := range c.Env {
			os.Unsetenv(k)
		}
	}
}

func main() {
	crdDir := flag.String("crds", "", "KubeRay's config/crd/bases directory (default: next to the ray-operator source)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile here")
	dumpWorld := flag.Bool("dump-world", false, "read cases, write each case's converged world (upgrade.go)")
	upgrade := flag.Bool("upgrade", false, "read dumped worlds (of another build), write what this build's operator does with each (upgrade.go)")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		must(err)
		must(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	ctrl.SetLogger(logr.Discard())
	debug.SetGCPercent(400) // many short-lived worlds: trade memory for less GC time
	for _, g := range rayGates {
		gateDefaults[string(g)] = utilfeature.DefaultFeatureGate.Enabled(g)
	}
	if *crdDir == "" {
		*crdDir = filepath.Join("..", ".cache", "conformance", "src", "ray-operator-"+utils.KUBERAY_VERSION, "config", "crd", "bases")
	}
	crds := map[string]*crd{}
	for kind, file := range map[string]string{"RayService": "ray.io_rayservices.yaml", "RayCluster": "ray.io_rayclusters.yaml",
		"RayJob": "ray.io_rayjobs.yaml"} {
		c, err := loadCRD(filepath.Join(*crdDir, file))
		if err != nil {
			fmt.Fprintln(os.Stderr, "conformance:", err)
			os.Exit(2)
		}
		crds[kind] = c
	}
	inputs := []io.Reader{os.Stdin}
	if flag.NArg() > 0 {
		inputs = nil
		for _, name := range flag.Args() {
			f, err := os.Open(name)
			if err != nil {
				fmt.Fprintln(os.Stderr, "conformance:", err)
				os.Exit(2)
			}
			defer f.Close()
			inputs = append(inputs, f)
		}
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for _, in := range inputs {
		scanner := bufio.NewScanner(in)
		scanner.Buffer(make([]byte, 1<<20), 64<<20)
		for scanner.Scan() {
			line := bytes.TrimSpace(scanner.Bytes())
			if len(line) == 0 {
				continue
			}
			if *dumpWorld || *upgrade {
				must(enc.Encode(upgradeLine(line, *upgrade, crds)))
				out.Flush()
				continue
			}
			var c Case
			var res Result
			if err := json.Unmarshal(line, &c); err != nil {
				res = Result{ID: c.ID, Error: "bad case: " + err.Error()}
			} else if c.Version != "" && "v"+c.Version != utils.KUBERAY_VERSION {
				res = Result{ID: c.ID, Kind: c.Kind, Error: "this build is KubeRay " + utils.KUBERAY_VERSION + ", the case asks for " + c.Version}
			} else {
				res = runCase(&c, crds)
			}
			must(enc.Encode(res))
			out.Flush()
		}
		if err := scanner.Err(); err != nil {
			fmt.Fprintln(os.Stderr, "conformance:", err)
			os.Exit(2)
		}
	}
}
