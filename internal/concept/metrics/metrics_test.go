package metrics

import (
	"strings"
	"testing"
	"time"
)

func TestExposition(t *testing.T) {
	t.Parallel()
	s := New()
	s.Reads.Add("read", 2)
	s.Denials.Add("mount,DENIED", 1)
	s.Delivered.Add("", 120)
	s.FuseOps.Observe("lookup", 20*time.Microsecond)
	s.FuseOps.Observe("lookup", 2*time.Second)
	var b strings.Builder
	s.Write(&b)
	out := b.String()
	for _, want := range []string{
		`fsguard_reads_total{origin="read"} 2`,
		`fsguard_denials_total{source="mount",code="DENIED"} 1`,
		`fsguard_build_info{version="`,
		`fsguard_bytes_delivered_total 120`,
		`fsguard_ledger_bytes_saved_total 0`,
		`fsguard_fuse_op_seconds_bucket{op="lookup",le="1e-05"} 0`,
		`fsguard_fuse_op_seconds_bucket{op="lookup",le="5e-05"} 1`,
		`fsguard_fuse_op_seconds_bucket{op="lookup",le="+Inf"} 2`,
		`fsguard_fuse_op_seconds_count{op="lookup"} 2`,
		"# TYPE fsguard_fuse_op_seconds histogram",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("exposition lacks %q:\n%s", want, out)
		}
	}
}
