package deploytest

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// The names the manifests use for the objects that refer to each other.
const (
	dir            = "../../deploy/kubernetes"
	valuesFile     = "llm-d-router-values.yaml"
	modelServer    = "lightllm"
	eppName        = "lightllm-epp"
	engineLabel    = "llm-d.ai/engine-type"
	engineType     = "lightllm-go"
	eppConfigKey   = "lightllm-plugins.yaml"
	poolAPIVersion = "inference.networking.k8s.io/v1"
)

// manifests holds the decoded objects every test reads.
type manifests struct {
	docs      []Doc
	server    deployment
	container container
	cfg       *config.Config
	preStop   time.Duration
	pool      inferencePool
	epp       deployment
	eppSvc    service
	eppConfig string // the EndpointPickerConfig text of the ConfigMap
}

func load(t *testing.T) *manifests {
	t.Helper()
	docs, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := &manifests{docs: docs}
	decode := func(kind, name string, v any) {
		t.Helper()
		d, err := Find(docs, kind, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	decode("Deployment", modelServer, &m.server)
	decode("InferencePool", modelServer, &m.pool)
	decode("Deployment", eppName, &m.epp)
	decode("Service", eppName, &m.eppSvc)
	var cm configMap
	decode("ConfigMap", eppName, &cm)
	m.eppConfig = cm.Data[eppConfigKey]
	if m.eppConfig == "" {
		t.Fatalf("ConfigMap %s has no %s", eppName, eppConfigKey)
	}

	cs := m.server.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("model-server pod has %d containers, want 1 (the roles are processes in one container)", len(cs))
	}
	m.container = cs[0]
	m.cfg = parseLaunch(t, m.container)
	if ps := m.container.Lifecycle.PreStop; ps != nil && ps.Sleep != nil {
		m.preStop = time.Duration(ps.Sleep.Seconds) * time.Second
	}
	return m
}

// parseLaunch parses the container's command line with the launcher's own
// flag set, so an unknown or malformed flag fails here as it would in the pod.
func parseLaunch(t *testing.T, c container) *config.Config {
	t.Helper()
	argv := append(append([]string(nil), c.Command...), c.Args...)
	if len(argv) < 2 || filepath.Base(argv[0]) != "lightllm" || argv[1] != "launch" {
		t.Fatalf("model-server command %q: want lightllm launch ...", argv)
	}
	fs := pflag.NewFlagSet("launch", pflag.ContinueOnError)
	flags := config.RegisterFlags(fs)
	// The two flags launch adds to the configuration flags (pkg/cli/launch.go).
	normal := fs.Bool("normal", false, "")
	fs.Bool("prepare-only", false, "")
	if err := fs.Parse(argv[2:]); err != nil {
		t.Fatalf("launch flags %q: %v", argv[2:], err)
	}
	if fs.NArg() != 0 {
		t.Fatalf("launch takes no arguments, got %q", fs.Args())
	}
	if !*normal {
		t.Error("launch without --normal")
	}
	cfg, err := flags.Config()
	if err != nil {
		t.Fatalf("launch flags: %v", err)
	}
	return cfg
}

func TestManifestsParse(t *testing.T) {
	m := load(t)
	seen := map[string]string{}
	for _, d := range m.docs {
		key := d.Kind + "/" + d.Name
		if prev, ok := seen[key]; ok {
			t.Errorf("%s defined twice (%s and %s)", key, prev, d)
		}
		seen[key] = d.String()
	}
	for _, want := range []string{"Deployment/lightllm", "Service/lightllm", "InferencePool/lightllm", "HTTPRoute/lightllm",
		"ConfigMap/lightllm-epp", "ServiceAccount/lightllm-epp", "Role/lightllm-epp", "RoleBinding/lightllm-epp",
		"Deployment/lightllm-epp", "Service/lightllm-epp"} {
		if _, ok := seen[want]; !ok {
			t.Errorf("missing %s", want)
		}
	}
}

func TestModelServerDeployment(t *testing.T) {
	m := load(t)
	labels := m.server.Spec.Template.Metadata.Labels
	c := m.container
	port, ok := containerPort(c, "http")
	tests := []struct {
		name string
		ok   bool
		msg  string
	}{
		{"engine-type label", labels[engineLabel] == engineType, fmt.Sprintf("pod labels %v lack %s: %s", labels, engineLabel, engineType)},
		{"selector matches the pods", len(m.server.Spec.Selector.MatchLabels) > 0 && subset(m.server.Spec.Selector.MatchLabels, labels), "selector does not select the template's labels"},
		{"http port", ok && port == m.cfg.Port, fmt.Sprintf("container port http=%d, --port=%d", port, m.cfg.Port)},
		{"listens beyond loopback", m.cfg.Host == "0.0.0.0" || m.cfg.Host == "::" || m.cfg.Host == "", fmt.Sprintf("--host=%s: the kubelet, Service and EPP reach the pod IP", m.cfg.Host)},
		{"GPU backend", m.cfg.Backend == config.BackendCUDA, "--backend is " + m.cfg.Backend},
		{"GPU limit", c.Resources.Limits["nvidia.com/gpu"] != "", "no nvidia.com/gpu limit"},
		{"GPU node selector", len(m.server.Spec.Template.Spec.NodeSelector) > 0, "no nodeSelector"},
		{"preStop", m.preStop > 0, "no preStop sleep"},
		{"no role stop override", m.cfg.StopTimeout > 0, "stop_timeout is 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Error(tc.msg)
			}
		})
	}
}

func TestProbesUseHealth(t *testing.T) {
	m := load(t)
	probes := map[string]*probe{"startup": m.container.StartupProbe, "readiness": m.container.ReadinessProbe, "liveness": m.container.LivenessProbe}
	for name, p := range probes {
		t.Run(name, func(t *testing.T) {
			if p == nil || p.HTTPGet == nil {
				t.Fatalf("no %s httpGet probe", name)
			}
			if p.HTTPGet.Path != "/health" {
				t.Errorf("%s probe path %q, want /health", name, p.HTTPGet.Path)
			}
			switch port := p.HTTPGet.Port.(type) {
			case string:
				if n, ok := containerPort(m.container, port); !ok || n != m.cfg.Port {
					t.Errorf("%s probe port %q is not the API port %d", name, port, m.cfg.Port)
				}
			case int:
				if port != m.cfg.Port {
					t.Errorf("%s probe port %d is not the API port %d", name, port, m.cfg.Port)
				}
			default:
				t.Errorf("%s probe port %v", name, port)
			}
		})
	}
	// A startup probe must outlast loading the weights (minutes on a GPU).
	if sp := m.container.StartupProbe; sp != nil {
		if window := time.Duration(sp.PeriodSeconds*sp.FailureThreshold) * time.Second; window < 5*time.Minute {
			t.Errorf("startup probe gives up after %s", window)
		}
	}
}

func TestGracePeriodCoversDrain(t *testing.T) {
	m := load(t)
	g := m.server.Spec.Template.Spec.TerminationGracePeriodSeconds
	if g == nil {
		t.Fatal("no terminationGracePeriodSeconds (the default 30 s is shorter than the drain)")
	}
	grace := time.Duration(*g) * time.Second
	// preStop runs first; then SIGTERM drains for up to graceful_timeout;
	// then the supervisor stops the roles, each within stop_timeout.
	need := m.preStop + m.cfg.GracefulTimeout.D() + m.cfg.StopTimeout.D()
	if grace <= need {
		t.Errorf("grace period %s <= preStop %s + graceful_timeout %s + stop_timeout %s",
			grace, m.preStop, m.cfg.GracefulTimeout.D(), m.cfg.StopTimeout.D())
	}
	if grace <= m.cfg.GracefulTimeout.D() {
		t.Errorf("grace period %s <= graceful_timeout %s", grace, m.cfg.GracefulTimeout.D())
	}
}

func TestInferencePoolSelectsTheServers(t *testing.T) {
	m := load(t)
	d, err := Find(m.docs, "InferencePool", modelServer)
	if err != nil {
		t.Fatal(err)
	}
	if d.APIVersion != poolAPIVersion {
		t.Errorf("InferencePool apiVersion %s, want %s", d.APIVersion, poolAPIVersion)
	}
	sel := m.pool.Spec.Selector.MatchLabels
	if len(sel) == 0 || !subset(sel, m.server.Spec.Template.Metadata.Labels) {
		t.Errorf("pool selector %v does not select the model-server pods %v", sel, m.server.Spec.Template.Metadata.Labels)
	}
	if sel[engineLabel] != engineType {
		t.Errorf("pool selector %v should require %s=%s (only lightllm pods speak these metric names)", sel, engineLabel, engineType)
	}
	ports := m.pool.Spec.TargetPorts
	if len(ports) < 1 || len(ports) > 8 {
		t.Fatalf("%d targetPorts, the CRD allows 1..8", len(ports))
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p.Number < 1 || p.Number > 65535 || seen[p.Number] {
			t.Errorf("target port %d invalid or repeated", p.Number)
		}
		seen[p.Number] = true
	}
	if !seen[m.cfg.Port] {
		t.Errorf("targetPorts %v miss the API port %d (which also serves /metrics)", ports, m.cfg.Port)
	}
	if ap := m.pool.Spec.AppProtocol; ap != "" && ap != "http" && ap != "kubernetes.io/h2c" {
		t.Errorf("appProtocol %q", ap)
	}
	ref := m.pool.Spec.EndpointPickerRef
	if ref == nil {
		t.Fatal("no endpointPickerRef")
	}
	if ref.Name != eppName || (ref.Kind != "" && ref.Kind != "Service") || (ref.Group != nil && *ref.Group != "") {
		t.Errorf("endpointPickerRef %+v does not name the Service %s", ref, eppName)
	}
	if ref.Port == nil || !slices.ContainsFunc(m.eppSvc.Spec.Ports, func(p struct {
		Name       string `yaml:"name"`
		Port       int    `yaml:"port"`
		TargetPort any    `yaml:"targetPort"`
	}) bool {
		return p.Port == ref.Port.Number
	}) {
		t.Errorf("endpointPickerRef port %+v is not a port of Service %s", ref.Port, eppName)
	}
	if ref.FailureMode != "" && ref.FailureMode != "FailOpen" && ref.FailureMode != "FailClose" {
		t.Errorf("failureMode %q", ref.FailureMode)
	}

	var route httpRoute
	rd, err := Find(m.docs, "HTTPRoute", modelServer)
	if err != nil {
		t.Fatal(err)
	}
	if err := rd.Decode(&route); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range route.Spec.Rules {
		for _, b := range r.BackendRefs {
			found = found || (b.Group == "inference.networking.k8s.io" && b.Kind == "InferencePool" && b.Name == modelServer)
		}
	}
	if !found || len(route.Spec.ParentRefs) == 0 {
		t.Errorf("HTTPRoute does not send a gateway's traffic to InferencePool %s: %+v", modelServer, route.Spec)
	}
}

func TestEPPDeploymentWiring(t *testing.T) {
	m := load(t)
	ps := m.epp.Spec.Template.Spec
	if len(ps.Containers) != 1 {
		t.Fatalf("EPP pod has %d containers", len(ps.Containers))
	}
	c := ps.Containers[0]
	args := map[string]string{}
	for _, a := range c.Args {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		args[k] = v
	}
	if args["pool-name"] != modelServer || args["pool-group"] != "inference.networking.k8s.io" {
		t.Errorf("EPP pool flags %v do not name InferencePool %s", args, modelServer)
	}
	// The config file must be the ConfigMap key, mounted where the flag says.
	cfgPath := args["config-file"]
	mounted := false
	for _, vm := range c.VolumeMounts {
		for _, v := range ps.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil && v.ConfigMap.Name == eppName &&
				filepath.Join(vm.MountPath, eppConfigKey) == cfgPath {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("--config-file=%s is not ConfigMap %s key %s", cfgPath, eppName, eppConfigKey)
	}
	grpcPort, _ := containerPort(c, "grpc")
	if args["grpc-port"] != fmt.Sprint(grpcPort) {
		t.Errorf("--grpc-port=%s, container port grpc=%d", args["grpc-port"], grpcPort)
	}
	if !subset(m.eppSvc.Spec.Selector, m.epp.Spec.Template.Metadata.Labels) {
		t.Errorf("Service %s does not select the EPP pods", eppName)
	}

	var rb roleBinding
	var rl role
	for kind, v := range map[string]any{"RoleBinding": &rb, "Role": &rl} {
		d, err := Find(m.docs, kind, eppName)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	if len(rb.Subjects) != 1 || rb.Subjects[0].Name != ps.ServiceAccountName || rb.RoleRef.Name != eppName {
		t.Errorf("RoleBinding %+v does not grant Role %s to the EPP's service account %q", rb, eppName, ps.ServiceAccountName)
	}
	for _, want := range []string{"pods", "inferencepools"} {
		if !slices.ContainsFunc(rl.Rules, func(r struct {
			APIGroups []string `yaml:"apiGroups"`
			Resources []string `yaml:"resources"`
			Verbs     []string `yaml:"verbs"`
		}) bool {
			return slices.Contains(r.Resources, want) && slices.Contains(r.Verbs, "watch")
		}) {
			t.Errorf("Role %s cannot watch %s", eppName, want)
		}
	}
}

func containerPort(c container, name string) (int, bool) {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

// subset reports whether every pair of sel is in labels.
func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
