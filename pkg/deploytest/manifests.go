// Package deploytest checks the Kubernetes manifests in deploy/kubernetes
// against each other and against the code they configure: the launcher's
// flags, the shm layout's size, the metric names the API port serves, and
// the EPP configuration the scale-out script runs. The checks are the tests
// of this package; this file loads the manifests.
//
// It complements scripts/validate-manifests.sh, which validates the core
// objects against the Kubernetes schemas with kubeconform when that can be
// installed; custom resources (InferencePool, HTTPRoute) and the
// EndpointPickerConfig have no schema there and are checked here.
package deploytest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"go.yaml.in/yaml/v3"
)

// Doc is one YAML document of a manifest file.
type Doc struct {
	File  string // base name
	Index int    // position in the file, from 0
	Kind  string
	Name  string
	// APIVersion is the object's apiVersion.
	APIVersion string
	node       *yaml.Node
}

func (d Doc) String() string { return fmt.Sprintf("%s#%d %s/%s", d.File, d.Index, d.Kind, d.Name) }

// Decode decodes the document into v (a struct with yaml tags, or a map).
func (d Doc) Decode(v any) error {
	if err := d.node.Decode(v); err != nil {
		return fmt.Errorf("decode %s: %w", d, err)
	}
	return nil
}

// header is what every Kubernetes object has.
type header struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
}

// LoadDir parses every *.yaml file in dir whose documents are Kubernetes
// objects, in file-name order. A file whose first document has no kind
// (a Helm values file) is skipped; a document without apiVersion, kind or
// metadata.name in an object file is an error, as is a duplicate key.
func LoadDir(dir string) ([]Doc, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.yaml in %s", dir)
	}
	sort.Strings(files)
	var docs []Doc
	for _, f := range files {
		fd, err := loadFile(f)
		if err != nil {
			return nil, err
		}
		if len(fd) == 0 {
			continue
		}
		docs = append(docs, fd...)
	}
	return docs, nil
}

func loadFile(path string) ([]Doc, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []Doc
	for i := 0; ; i++ {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("parse %s document %d: %w", path, i, err)
		}
		if len(n.Content) == 0 { // an empty document (a trailing ---)
			continue
		}
		var h header
		if err := n.Decode(&h); err != nil {
			return nil, fmt.Errorf("parse %s document %d: %w", path, i, err)
		}
		if i == 0 && h.Kind == "" {
			return nil, nil // not an object file
		}
		d := Doc{File: filepath.Base(path), Index: i, Kind: h.Kind, Name: h.Metadata.Name, APIVersion: h.APIVersion, node: &n}
		if h.APIVersion == "" || h.Kind == "" || h.Metadata.Name == "" {
			return nil, fmt.Errorf("%s: apiVersion, kind and metadata.name are required", d)
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// Find returns the document of that kind and name.
func Find(docs []Doc, kind, name string) (Doc, error) {
	for _, d := range docs {
		if d.Kind == kind && d.Name == name {
			return d, nil
		}
	}
	return Doc{}, fmt.Errorf("no %s named %q", kind, name)
}

// LoadValues parses a Helm values file.
func LoadValues(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return v, nil
}

// Lookup walks nested maps: Lookup(v, "router", "epp", "image").
func Lookup(v any, path ...string) (any, error) {
	for i, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%v is not a map", path[:i])
		}
		if v, ok = m[k]; !ok {
			return nil, fmt.Errorf("%v: missing", path[:i+1])
		}
	}
	return v, nil
}
