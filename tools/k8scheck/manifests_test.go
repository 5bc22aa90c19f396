// Package k8scheck decodes fsguard's Kubernetes manifests strictly against
// the real API types, so a misspelt or misplaced field fails here, not on a
// cluster. It is its own module: the main module stays free of client-go's
// dependency tree. Run: cd tools/k8scheck && go test ./... (.ci/run does).
package k8scheck

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
	if ds.Namespace != "fsguard" {
		t.Fatalf("the DaemonSet is in namespace %q, not the shipped one", ds.Namespace)
	}
	// The daemon performs the agent's writes: its project is read-write
	// (only the agent's view is read-only).
	for _, m := range c.VolumeMounts {
		if m.Name == "project" && m.ReadOnly {
			t.Fatal("the project is read-only for the daemon: every write and edit would fail with EROFS")
		}
	}
	policyMap := false
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == "fsguard-policy" {
			policyMap = true
		}
	}
	if !policyMap {
		t.Fatal("the policy does not come from the fsguard-policy ConfigMap")
	}
	var follower *corev1.Container
	for i, c := range ds.Spec.Template.Spec.Containers {
		// scripts/release.sh replaces the placeholder with the version's tag.
		if c.Image != "ghcr.io/fsguard/fsguard:VERSION" {
			t.Errorf("container %s: image %q, want the release's placeholder ghcr.io/fsguard/fsguard:VERSION", c.Name, c.Image)
		}
		if _, ok := c.Resources.Requests[corev1.ResourceMemory]; !ok {
			t.Errorf("container %s has no memory request", c.Name)
		}
		if slices.Equal(c.Args[:3], []string{"journal", "tail", "--follow"}) {
			follower = &ds.Spec.Template.Spec.Containers[i]
		}
	}
	if follower == nil {
		t.Fatal("no follower sidecar (journal tail --follow)")
	}
	if !slices.ContainsFunc(follower.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/var/lib/fsguard" }) {
		t.Fatal("the follower does not see the journal")
	}
}

// TestNamespaceAndPolicy: the namespace the DaemonSet names ships, with
// the Pod Security level a privileged hostPath pod needs, and the policy
// ConfigMap lets the agent pod's uid use the socket.
func TestNamespaceAndPolicy(t *testing.T) {
	var ns corev1.Namespace
	decode(t, "../../deploy/k8s/namespace.yaml", &ns)
	if ns.Name != "fsguard" || ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Fatalf("namespace %s, labels %v", ns.Name, ns.Labels)
	}
	var cm corev1.ConfigMap
	decode(t, "../../deploy/k8s/policy-configmap.yaml", &cm)
	pol, ok := cm.Data["policy.toml"]
	if cm.Name != "fsguard-policy" || cm.Namespace != "fsguard" || !ok {
		t.Fatalf("ConfigMap %s/%s with keys %v", cm.Namespace, cm.Name, cm.Data)
	}
	var pod corev1.Pod
	decode(t, "../../deploy/k8s/agent-pod.yaml", &pod)
	uid := *pod.Spec.Containers[0].SecurityContext.RunAsUser
	m := regexp.MustCompile(`(?m)^allow_uids = \[([0-9, ]*)\]`).FindStringSubmatch(pol)
	if m == nil || !slices.Contains(strings.Split(strings.ReplaceAll(m[1], " ", ""), ","), strconv.FormatInt(uid, 10)) {
		t.Fatalf("the policy's allow_uids %v does not hold the agent's uid %d:\n%s", m, uid, pol)
	}
	if !strings.Contains(pol, `path = "/srv/project"`) {
		t.Fatalf("the policy's root is not the daemon's project mount:\n%s", pol)
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
