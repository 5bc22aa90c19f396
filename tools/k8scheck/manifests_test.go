// Package k8scheck decodes fsguard's Kubernetes manifests strictly against
// the real API types, so a misspelt or misplaced field fails here, not on a
// cluster. It is its own module: the main module stays free of client-go's
// dependency tree. Run: cd tools/k8scheck && go test ./... (.ci/run does).
package k8scheck

import (
	"os"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func decode(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestDaemonSet(t *testing.T) {
	var ds appsv1.DaemonSet
	decode(t, "../../deploy/k8s/daemonset.yaml", &ds)
	if ds.Kind != "DaemonSet" || ds.APIVersion != "apps/v1" {
		t.Fatalf("kind %s/%s", ds.APIVersion, ds.Kind)
	}
	c := ds.Spec.Template.Spec.Containers[0]
	if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Fatal("the daemon must be privileged to mount")
	}
	if c.LivenessProbe == nil || c.LivenessProbe.Exec == nil || c.LivenessProbe.Exec.Command[1] != "health" {
		t.Fatal("no liveness probe on fsguard health")
	}
	if mem, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || mem.IsZero() {
		t.Fatal("the daemon needs a memory limit: it sets its own from the cgroup's")
	}
	bidirectional := false
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/srv/agent" && m.MountPropagation != nil && *m.MountPropagation == corev1.MountPropagationBidirectional {
			bidirectional = true
		}
	}
	if !bidirectional {
		t.Fatal("the mount must propagate to the node (Bidirectional on /srv/agent)")
	}
	if ds.Spec.Selector == nil || ds.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != ds.Spec.Template.Labels["app.kubernetes.io/name"] {
		t.Fatal("the selector does not select the template")
	}
}

func TestAgentPod(t *testing.T) {
	var pod corev1.Pod
	decode(t, "../../deploy/k8s/agent-pod.yaml", &pod)
	c := pod.Spec.Containers[0]
	if c.SecurityContext == nil || c.SecurityContext.RunAsUser == nil || *c.SecurityContext.RunAsUser == 0 {
		t.Fatal("the agent must not run as root")
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/workspace" && (!m.ReadOnly || m.MountPropagation == nil || *m.MountPropagation != corev1.MountPropagationHostToContainer) {
			t.Fatalf("/workspace must be read-only with HostToContainer: %+v", m)
		}
	}
}
