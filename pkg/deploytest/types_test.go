package deploytest

// The subsets of the Kubernetes, Gateway API, Inference Extension and EPP
// types that the checks read. Field names are the APIs' JSON names.

type objectMeta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type deployment struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		Replicas *int `yaml:"replicas"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     podSpec    `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	ServiceAccountName            string            `yaml:"serviceAccountName"`
	TerminationGracePeriodSeconds *int              `yaml:"terminationGracePeriodSeconds"`
	NodeSelector                  map[string]string `yaml:"nodeSelector"`
	Tolerations                   []struct {
		Key string `yaml:"key"`
	} `yaml:"tolerations"`
	Containers []container `yaml:"containers"`
	Volumes    []volume    `yaml:"volumes"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	StartupProbe   *probe `yaml:"startupProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	Lifecycle      struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
			Exec *struct {
				Command []string `yaml:"command"`
			} `yaml:"exec"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"` // a number or a port name
	} `yaml:"httpGet"`
	GRPC *struct {
		Port int `yaml:"port"`
	} `yaml:"grpc"`
	PeriodSeconds    int `yaml:"periodSeconds"`
	FailureThreshold int `yaml:"failureThreshold"`
}

type volume struct {
	Name     string `yaml:"name"`
	EmptyDir *struct {
		Medium    string `yaml:"medium"`
		SizeLimit string `yaml:"sizeLimit"`
	} `yaml:"emptyDir"`
	ConfigMap *struct {
		Name string `yaml:"name"`
	} `yaml:"configMap"`
}

type service struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type inferencePool struct {
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		TargetPorts []struct {
			Number int `yaml:"number"`
		} `yaml:"targetPorts"`
		AppProtocol       string `yaml:"appProtocol"`
		EndpointPickerRef *struct {
			Group *string `yaml:"group"`
			Kind  string  `yaml:"kind"`
			Name  string  `yaml:"name"`
			Port  *struct {
				Number int `yaml:"number"`
			} `yaml:"port"`
			FailureMode string `yaml:"failureMode"`
		} `yaml:"endpointPickerRef"`
	} `yaml:"spec"`
}

type httpRoute struct {
	Spec struct {
		ParentRefs []struct {
			Name string `yaml:"name"`
		} `yaml:"parentRefs"`
		Rules []struct {
			BackendRefs []struct {
				Group string `yaml:"group"`
				Kind  string `yaml:"kind"`
				Name  string `yaml:"name"`
			} `yaml:"backendRefs"`
		} `yaml:"rules"`
	} `yaml:"spec"`
}

type configMap struct {
	Data map[string]string `yaml:"data"`
}

type role struct {
	Rules []struct {
		APIGroups []string `yaml:"apiGroups"`
		Resources []string `yaml:"resources"`
		Verbs     []string `yaml:"verbs"`
	} `yaml:"rules"`
}

type roleBinding struct {
	Subjects []struct {
		Kind string `yaml:"kind"`
		Name string `yaml:"name"`
	} `yaml:"subjects"`
	RoleRef struct {
		Kind string `yaml:"kind"`
		Name string `yaml:"name"`
	} `yaml:"roleRef"`
}

// eppConfig is llm-d-router's EndpointPickerConfig (llm-d.ai/v1alpha1).
type eppConfig struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Plugins    []struct {
		Name       string         `yaml:"name"`
		Type       string         `yaml:"type"`
		Parameters map[string]any `yaml:"parameters"`
	} `yaml:"plugins"`
	SchedulingProfiles []struct {
		Name    string `yaml:"name"`
		Plugins []struct {
			PluginRef string   `yaml:"pluginRef"`
			Weight    *float64 `yaml:"weight"`
		} `yaml:"plugins"`
	} `yaml:"schedulingProfiles"`
	DataLayer *struct {
		Sources []struct {
			PluginRef  string `yaml:"pluginRef"`
			Extractors []struct {
				PluginRef string `yaml:"pluginRef"`
			} `yaml:"extractors"`
		} `yaml:"sources"`
		Discovery *struct {
			PluginRef string `yaml:"pluginRef"`
		} `yaml:"discovery"`
	} `yaml:"dataLayer"`
}

// engineConfig is one entry of core-metrics-extractor's engineConfigs.
type engineConfig struct {
	Name                string `yaml:"name"`
	QueuedRequestsSpec  string `yaml:"queuedRequestsSpec"`
	RunningRequestsSpec string `yaml:"runningRequestsSpec"`
	KVUsageSpec         string `yaml:"kvUsageSpec"`
	CacheInfoSpec       string `yaml:"cacheInfoSpec"`
	LoRASpec            string `yaml:"loraSpec"`
}
