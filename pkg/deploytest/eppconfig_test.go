package deploytest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/lightllm-go/lightllm/pkg/metrics"
)

func parseEPPConfig(t *testing.T, text string) (eppConfig, map[string]any) {
	t.Helper()
	var c eppConfig
	var generic map[string]any
	if err := yaml.Unmarshal([]byte(text), &c); err != nil {
		t.Fatalf("EndpointPickerConfig: %v", err)
	}
	if err := yaml.Unmarshal([]byte(text), &generic); err != nil {
		t.Fatalf("EndpointPickerConfig: %v", err)
	}
	return c, generic
}

// engineConfigOf returns core-metrics-extractor's parameters and the
// engineConfigs entry for engine.
func engineConfigOf(t *testing.T, c eppConfig, engine string) (map[string]any, engineConfig) {
	t.Helper()
	for _, p := range c.Plugins {
		if p.Type != "core-metrics-extractor" {
			continue
		}
		raw, err := yaml.Marshal(p.Parameters["engineConfigs"])
		if err != nil {
			t.Fatal(err)
		}
		var ecs []engineConfig
		if err := yaml.Unmarshal(raw, &ecs); err != nil {
			t.Fatalf("engineConfigs: %v", err)
		}
		for _, ec := range ecs {
			if ec.Name == engine {
				return p.Parameters, ec
			}
		}
		t.Fatalf("engineConfigs has no entry %q: %+v", engine, ecs)
	}
	t.Fatal("no core-metrics-extractor plugin")
	return nil, engineConfig{}
}

func TestEPPConfigIsComplete(t *testing.T) {
	m := load(t)
	c, _ := parseEPPConfig(t, m.eppConfig)
	if c.APIVersion != "llm-d.ai/v1alpha1" || c.Kind != "EndpointPickerConfig" {
		t.Errorf("config is %s %s, want llm-d.ai/v1alpha1 EndpointPickerConfig", c.APIVersion, c.Kind)
	}
	// Plugin names (defaulting to the type) are unique, and every
	// reference resolves to one of them.
	types := map[string]string{}
	for _, p := range c.Plugins {
		name := p.Name
		if name == "" {
			name = p.Type
		}
		if _, dup := types[name]; dup {
			t.Errorf("plugin %q defined twice", name)
		}
		types[name] = p.Type
	}
	var refs []string
	weights := map[string]float64{}
	for _, prof := range c.SchedulingProfiles {
		for _, p := range prof.Plugins {
			refs = append(refs, p.PluginRef)
			if p.Weight != nil {
				weights[types[p.PluginRef]] = *p.Weight
			}
		}
	}
	if c.DataLayer == nil || len(c.DataLayer.Sources) == 0 {
		t.Fatal("no dataLayer source: the EPP would not scrape the pods")
	}
	for _, s := range c.DataLayer.Sources {
		refs = append(refs, s.PluginRef)
		for _, e := range s.Extractors {
			refs = append(refs, e.PluginRef)
		}
	}
	for _, r := range refs {
		if _, ok := types[r]; !ok {
			t.Errorf("pluginRef %q names no plugin", r)
		}
	}
	for _, scorer := range []string{"queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer"} {
		if weights[scorer] <= 0 {
			t.Errorf("scorer %s is not in the scheduling profile with a positive weight", scorer)
		}
	}

	params, ec := engineConfigOf(t, c, engineType)
	if params["engineLabelKey"] != engineLabel {
		t.Errorf("engineLabelKey %v, want %s (the pods' label)", params["engineLabelKey"], engineLabel)
	}
	if params["defaultEngine"] != engineType {
		t.Errorf("defaultEngine %v, want %s", params["defaultEngine"], engineType)
	}
	specs := map[string]string{"queue": ec.QueuedRequestsSpec, "running": ec.RunningRequestsSpec, "kv usage": ec.KVUsageSpec, "cache info": ec.CacheInfoSpec}
	for what, spec := range specs {
		if spec == "" {
			t.Errorf("engineConfigs %s: no %s metric", engineType, what)
		}
	}
	if ec.LoRASpec != "" {
		t.Errorf("loraSpec %q: lightllm-go serves no LoRA adapters", ec.LoRASpec)
	}
}

// specRE is the EPP's metric-spec syntax: name{label=value,...}.
var specRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})?$`)

// TestEngineConfigNamesAreServed scrapes the live collector the API port
// mounts on /metrics (pkg/metrics) and checks that every metric the EPP is
// told to read is there, with the labels it matches on.
func TestEngineConfigNamesAreServed(t *testing.T) {
	m := load(t)
	c, _ := parseEPPConfig(t, m.eppConfig)
	_, ec := engineConfigOf(t, c, engineType)

	reg := prometheus.NewRegistry()
	load := func() metrics.LiveLoad {
		return metrics.LiveLoad{Waiting: 3, Running: 2, KVUsage: 0.25, KVCapacity: 4096}
	}
	reg.MustRegister(metrics.NewLiveCollector(load, metrics.LiveOptions{ModelName: m.cfg.ModelName}))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string][]map[string]string{}
	values := map[string]float64{}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			ls := map[string]string{}
			for _, l := range s.GetLabel() {
				ls[l.GetName()] = l.GetValue()
			}
			served[f.GetName()] = append(served[f.GetName()], ls)
			values[f.GetName()] = s.GetGauge().GetValue()
		}
	}
	tests := []struct {
		what, spec string
		want       float64
		labels     []string
	}{
		{"queue", ec.QueuedRequestsSpec, 3, nil},
		{"running", ec.RunningRequestsSpec, 2, nil},
		{"kv usage", ec.KVUsageSpec, 0.25, nil},
		{"cache info", ec.CacheInfoSpec, 1, []string{"block_size", "num_gpu_blocks"}},
	}
	for _, tc := range tests {
		t.Run(tc.what, func(t *testing.T) {
			mm := specRE.FindStringSubmatch(tc.spec)
			if mm == nil {
				t.Fatalf("%q is not a metric spec", tc.spec)
			}
			samples, ok := served[mm[1]]
			if !ok {
				t.Fatalf("the API port serves no %s (has %v)", mm[1], keys(served))
			}
			if values[mm[1]] != tc.want {
				t.Errorf("%s = %v, want %v from the load", mm[1], values[mm[1]], tc.want)
			}
			for _, pair := range strings.Split(mm[2], ",") {
				k, v, ok := strings.Cut(pair, "=")
				if pair == "" || !ok {
					continue
				}
				if samples[0][strings.TrimSpace(k)] != strings.Trim(strings.TrimSpace(v), `"`) {
					t.Errorf("%s: no sample with %s", mm[1], pair)
				}
			}
			for _, l := range tc.labels {
				if _, ok := samples[0][l]; !ok {
					t.Errorf("%s lacks label %s: %v", mm[1], l, samples[0])
				}
			}
		})
	}
	if got := served[specRE.FindStringSubmatch(ec.CacheInfoSpec)[1]][0]; got["block_size"] != "1" || got["num_gpu_blocks"] != "4096" {
		t.Errorf("cache info labels %v, want block_size 1 and num_gpu_blocks = the KV capacity", got)
	}
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestHelmValuesMatchPlainManifests: the chart path and the plain-YAML path
// must configure the same EPP and the same pool.
func TestHelmValuesMatchPlainManifests(t *testing.T) {
	m := load(t)
	v, err := LoadValues(filepath.Join(dir, valuesFile))
	if err != nil {
		t.Fatal(err)
	}
	file, err := Lookup(v, "router", "epp", "pluginsConfigFile")
	if err != nil {
		t.Fatal(err)
	}
	text, err := Lookup(v, "router", "epp", "pluginsCustomConfig", fmt.Sprint(file))
	if err != nil {
		t.Fatalf("pluginsConfigFile %v is not in pluginsCustomConfig: %v", file, err)
	}
	_, helmCfg := parseEPPConfig(t, fmt.Sprint(text))
	_, plainCfg := parseEPPConfig(t, m.eppConfig)
	if !reflect.DeepEqual(helmCfg, plainCfg) {
		t.Errorf("the Helm values' EndpointPickerConfig differs from ConfigMap %s's", eppName)
	}

	sel, err := Lookup(v, "router", "modelServers", "matchLabels")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	for k, val := range m.pool.Spec.Selector.MatchLabels {
		want[k] = val
	}
	if !reflect.DeepEqual(sel, want) {
		t.Errorf("Helm matchLabels %v, InferencePool selector %v", sel, want)
	}
	ports, err := Lookup(v, "router", "modelServers", "targetPorts")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ports) != fmt.Sprintf("[map[number:%d]]", m.cfg.Port) {
		t.Errorf("Helm targetPorts %v, want the API port %d", ports, m.cfg.Port)
	}
	tag, err := Lookup(v, "router", "epp", "image", "tag")
	if err != nil {
		t.Fatal(err)
	}
	if img := m.epp.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":"+fmt.Sprint(tag)) {
		t.Errorf("EPP image %s and Helm tag %v differ", img, tag)
	}
}

// TestScaleoutScriptConfig runs the scale-out script's config step: its EPP
// configuration must be the manifests' plus file discovery, so the local
// test exercises what the cluster runs.
func TestScaleoutScriptConfig(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found: cannot run scripts/scaleout-local.sh")
	}
	m := load(t)
	endpoints := filepath.Join(t.TempDir(), "endpoints.yaml")
	cmd := exec.Command(bash, "../../scripts/scaleout-local.sh", "print-epp-config", endpoints)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if err := cmd.Run(); err != nil {
		t.Fatalf("scaleout-local.sh print-epp-config: %v\n%s", err, stderr.String())
	}
	local, localGeneric := parseEPPConfig(t, out.String())
	_, plainGeneric := parseEPPConfig(t, m.eppConfig)

	// The file-discovery plugin watches the endpoints file...
	var disc map[string]any
	plugins, _ := localGeneric["plugins"].([]any)
	kept := []any{}
	for _, p := range plugins {
		pm, _ := p.(map[string]any)
		if pm["type"] == "file-discovery" {
			disc = pm
			continue
		}
		kept = append(kept, p)
	}
	if disc == nil {
		t.Fatal("no file-discovery plugin")
	}
	params, _ := disc["parameters"].(map[string]any)
	if params["path"] != endpoints || params["watchFile"] != true {
		t.Errorf("file-discovery parameters %v: want path %s, watchFile true", params, endpoints)
	}
	name, _ := disc["name"].(string)
	if name == "" {
		name = "file-discovery"
	}
	if local.DataLayer == nil || local.DataLayer.Discovery == nil || local.DataLayer.Discovery.PluginRef != name {
		t.Fatalf("dataLayer.discovery does not reference %s", name)
	}
	// ...and the rest is the cluster's configuration, unchanged.
	localGeneric["plugins"] = kept
	dl, _ := localGeneric["dataLayer"].(map[string]any)
	delete(dl, "discovery")
	if !reflect.DeepEqual(localGeneric, plainGeneric) {
		got, _ := yaml.Marshal(localGeneric)
		want, _ := yaml.Marshal(plainGeneric)
		t.Errorf("the script's config differs from the manifests' beyond discovery\n got:\n%s\nwant:\n%s", got, want)
	}
}
