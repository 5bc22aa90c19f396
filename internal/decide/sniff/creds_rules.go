package sniff

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"github.com/fsguard/fsguard/internal/concept/policy"
)

// The families fsguard knows (policy.SecretFamilies names them). Each is
// written from its provider's published format: prefix, alphabet, length,
// checksum. A value is never a credential when it is a documented example
// or a placeholder (see plausible).

// cls makes a class from ranges written as "A-Za-z0-9_-".
func cls(spec string) *class {
	var c class
	for i := 0; i < len(spec); i++ {
		if i+2 < len(spec) && spec[i+1] == '-' {
			for b := int(spec[i]); b <= int(spec[i+2]); b++ {
				c[b] = true
			}
			i += 2
			continue
		}
		c[spec[i]] = true
	}
	return &c
}

var (
	alnum    = cls("A-Za-z0-9")
	digit    = cls("0-9")
	hexl     = cls("0-9a-f")
	hexa     = cls("0-9a-fA-F")
	b64url   = cls("A-Za-z0-9_-")
	b64      = cls("A-Za-z0-9+/")
	b64eq    = cls("A-Za-z0-9+/=")
	base32   = cls("A-Z2-7")
	upperNum = cls("A-Z0-9")
	bech32   = cls("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")
	// userinfo is what may follow "://" in a URL's user name.
	userinfo = cls("A-Za-z0-9._~%!$&'()*+,;=-")
)

// seg is a literal, or a run of one class between min and max bytes long.
type seg struct {
	lit      string
	cls      *class
	min, max int
}

func lit(s string) seg             { return seg{lit: s} }
func run(c *class, lo, hi int) seg { return seg{cls: c, min: lo, max: hi} }
func exact(c *class, n int) seg    { return seg{cls: c, min: n, max: n} }
func segs(ss ...seg) []seg         { return ss }
func oneOf(s string) []string      { return strings.Fields(s) }
func within(c []byte, i int) bool  { return i >= 0 && i < len(c) }

// boundary reports whether a credential may start at at: nothing of a
// word stands before it. An escape ends what stood before as a space
// would: "\n" or "\t" in a JSON or C string, "%20" or "%3D" in a URL.
func boundary(c []byte, at int) bool { return at == 0 || !alnum[c[at-1]] || escaped(c, at) }

// escaped reports whether an escape ends right before at.
func escaped(c []byte, at int) bool {
	return at >= 2 && c[at-2] == '\\' ||
		at >= 3 && c[at-3] == '%' && hexDigit(c[at-2]) && hexDigit(c[at-1])
}

func hexDigit(b byte) bool { return b >= '0' && b <= '9' || b|0x20 >= 'a' && b|0x20 <= 'f' }
func hasUpperLower(b []byte) bool {
	return bytes.ContainsFunc(b, isUpperR) && bytes.ContainsFunc(b, isLowerR)
}
func isUpperR(r rune) bool   { return r >= 'A' && r <= 'Z' }
func isLowerR(r rune) bool   { return r >= 'a' && r <= 'z' }
func isDigitR(r rune) bool   { return r >= '0' && r <= '9' }
func hasDigit(b []byte) bool { return bytes.ContainsFunc(b, isDigitR) }
func endsAA(b []byte) bool   { return bytes.HasSuffix(b, []byte("AA")) }
func firstDigits(n int) func([]byte) bool {
	return func(b []byte) bool {
		return len(b) >= n && !bytes.ContainsFunc(b[:n], func(r rune) bool { return !isDigitR(r) })
	}
}

// match matches ss at c[p:] and returns the end, or -1. Each run is
// greedy and must end where its class does: a run that goes on past its
// max is not the credential.
func match(c []byte, p int, ss []seg) int {
	for _, g := range ss {
		if g.lit != "" {
			if !hasAt(c, p, g.lit, false) {
				return -1
			}
			p += len(g.lit)
			continue
		}
		n := 0
		for p+n < len(c) && n <= g.max && g.cls[c[p+n]] {
			n++
		}
		if n < g.min || n > g.max {
			return -1
		}
		p += n
	}
	return p
}

// placeholders are words whose presence in a value says it is not a
// credential: providers' documented examples, templates' stand-ins.
var placeholders = [][]byte{[]byte("example"), []byte("dummy"), []byte("placeholder"), []byte("xxxx"), []byte("****"), []byte("redacted")}

// plausible reports whether a credential's secret part could be one: no
// placeholder word, no run already masked, and enough distinct bytes to
// be random.
func plausible(b []byte) bool {
	var low [256]bool
	distinct := 0
	for _, c := range b {
		if c == Fill {
			return false
		}
		l := c
		if isLetter(c) {
			l |= 0x20
		}
		if !low[l] {
			low[l] = true
			distinct++
		}
	}
	lower := bytes.ToLower(b)
	for _, p := range placeholders {
		if bytes.Contains(lower, p) {
			return false
		}
	}
	switch {
	case len(b) >= 16:
		return distinct >= 6
	case len(b) >= 6:
		return distinct >= 3
	}
	return distinct >= 1
}

// tokenRule is a family recognised by a prefix and what follows it.
type tokenRule struct {
	name     string
	prefixes []string
	next     *class // for prefixes shorter than 4 bytes
	body     []seg
	// keep is the bytes kept visible: -1 for the prefix.
	keep int
	// check, when set, must accept the whole token (prefix included).
	check func(tok []byte) bool
	// gen makes a valid body for SampleCredentials (nil: from body).
	gen func(r *rand.Rand, prefix string) string
}

func (t tokenRule) rule() *rule {
	return &rule{
		name: t.name, anchors: t.prefixes, next: t.next,
		find: func(c []byte, at, n int, out []span) []span {
			if !boundary(c, at) {
				return out
			}
			e := match(c, at+n, t.body)
			if e < 0 || !plausible(c[at+n:e]) || (t.check != nil && !t.check(c[at:e])) {
				return out
			}
			keep := n
			if t.keep >= 0 {
				keep = t.keep
			}
			return append(out, span{s: at, e: e, keep: keep})
		},
	}
}

// sample makes a valid token with prefix p.
func (t tokenRule) sample(r *rand.Rand, p string) string {
	if t.gen != nil {
		return p + t.gen(r, p)
	}
	return p + fromSegs(r, t.body)
}

// fromSegs makes random text matching ss: each run at its least length
// (at least 32 where it may be that long), of its letters and digits.
func fromSegs(r *rand.Rand, ss []seg) string {
	var b strings.Builder
	for _, g := range ss {
		if g.lit != "" {
			b.WriteString(g.lit)
			continue
		}
		var pool []byte
		for c := range 256 {
			if g.cls[c] && alnum[c] {
				pool = append(pool, byte(c))
			}
		}
		n := g.min
		if n < 32 && g.max >= 32 {
			n = 32
		}
		for range n {
			b.WriteByte(pool[r.IntN(len(pool))])
		}
	}
	return b.String()
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// crc62 reports whether a GitHub or npm token (a 4-byte prefix, 30 bytes
// of entropy and 6 of checksum) ends in the base62 CRC-32 of its entropy,
// as their formats publish.
func crc62(tok []byte) bool {
	if len(tok) != 40 {
		return false
	}
	var v uint64
	for _, c := range tok[34:] {
		i := strings.IndexByte(base62, c)
		if i < 0 {
			return false
		}
		v = v*62 + uint64(i)
	}
	return v == uint64(crc32.ChecksumIEEE(tok[4:34]))
}

// genCRC62 makes 30 random base62 bytes and their checksum.
func genCRC62(r *rand.Rand, _ string) string {
	b := make([]byte, 30)
	for i := range b {
		b[i] = base62[r.IntN(62)]
	}
	v := crc32.ChecksumIEEE(b)
	sum := make([]byte, 6)
	for i := 5; i >= 0; i-- {
		sum[i] = base62[v%62]
		v /= 62
	}
	return string(b) + string(sum)
}

// tokens are the families told by their prefix.
var tokens = []tokenRule{
	{name: "github-pat", prefixes: oneOf("ghp_"), body: segs(exact(alnum, 36)), keep: -1, check: crc62, gen: genCRC62},
	{name: "github-oauth", prefixes: oneOf("gho_"), body: segs(exact(alnum, 36)), keep: -1, check: crc62, gen: genCRC62},
	{name: "github-user-token", prefixes: oneOf("ghu_"), body: segs(exact(alnum, 36)), keep: -1, check: crc62, gen: genCRC62},
	{name: "github-app-token", prefixes: oneOf("ghs_"), body: segs(exact(alnum, 36)), keep: -1, check: crc62, gen: genCRC62},
	{name: "github-refresh-token", prefixes: oneOf("ghr_"), body: segs(exact(alnum, 36)), keep: -1, check: crc62, gen: genCRC62},
	{name: "github-fine-grained-pat", prefixes: oneOf("github_pat_"), body: segs(exact(alnum, 22), lit("_"), exact(alnum, 59)), keep: -1},
	{name: "gitlab-pat", prefixes: oneOf("glpat-"), body: segs(run(cls("A-Za-z0-9_.-"), 20, 255)), keep: -1, check: notDotEnd},
	{name: "gitlab-token", prefixes: oneOf("gldt- glptt- glrt- glcbt- glffct- glft- glimt- glagent- gloas- glsoat- GR1348941"), body: segs(run(cls("A-Za-z0-9_.-"), 20, 255)), keep: -1, check: notDotEnd},
	{name: "google-api-key", prefixes: oneOf("AIza"), body: segs(exact(b64url, 35)), keep: -1},
	{name: "slack-token", prefixes: oneOf("xoxb- xoxp- xoxa- xoxr- xoxs- xoxo- xoxe- xoxe.xoxp- xoxe.xoxb-"), body: segs(run(cls("A-Za-z0-9-"), 20, 255)), keep: -1, check: hasDigit},
	{name: "slack-app-token", prefixes: oneOf("xapp-"), body: segs(run(cls("A-Za-z0-9-"), 30, 255)), keep: -1, check: hasDigit},
	{name: "stripe-key", prefixes: oneOf("sk_live_ sk_test_ sk_prod_ rk_live_ rk_test_ rk_prod_"), body: segs(run(alnum, 16, 255)), keep: -1},
	{name: "stripe-webhook-secret", prefixes: oneOf("whsec_"), body: segs(run(alnum, 24, 128)), keep: -1},
	{name: "openai-key", prefixes: oneOf("sk-proj- sk-svcacct- sk-admin-"), body: segs(run(b64url, 40, 255)), keep: -1},
	{name: "openai-key", prefixes: oneOf("sk-"), next: alnum, body: segs(exact(alnum, 20), lit("T3BlbkFJ"), exact(alnum, 20)), keep: 3},
	{name: "anthropic-key", prefixes: oneOf("sk-ant-api03- sk-ant-admin01- sk-ant-oat01- sk-ant-ort01-"), body: segs(run(b64url, 80, 255)), keep: -1, check: endsAA,
		gen: func(r *rand.Rand, _ string) string { return fromSegs(r, segs(exact(b64url, 93))) + "AA" }},
	{name: "huggingface-token", prefixes: oneOf("hf_"), next: alnum, body: segs(run(alnum, 30, 40)), keep: -1},
	{name: "huggingface-token", prefixes: oneOf("api_org_"), body: segs(run(alnum, 30, 40)), keep: -1},
	{name: "npm-token", prefixes: oneOf("npm_"), body: segs(exact(alnum, 36)), keep: -1, check: crc62, gen: genCRC62},
	{name: "pypi-token", prefixes: oneOf("pypi-AgEIcHlwaS5vcmc"), body: segs(run(b64url, 50, 2000)), keep: 5},
	{name: "dockerhub-pat", prefixes: oneOf("dckr_pat_ dckr_oat_"), body: segs(run(b64url, 20, 64)), keep: -1},
	{name: "sendgrid-key", prefixes: oneOf("SG."), next: b64url, body: segs(exact(b64url, 22), lit("."), exact(b64url, 43)), keep: -1},
	{name: "shopify-token", prefixes: oneOf("shpat_ shpca_ shppa_ shpss_"), body: segs(exact(hexa, 32)), keep: -1},
	{name: "databricks-token", prefixes: oneOf("dapi"), body: segs(exact(hexl, 32)), keep: -1},
	{name: "digitalocean-token", prefixes: oneOf("dop_v1_ doo_v1_ dor_v1_"), body: segs(exact(hexl, 64)), keep: -1},
	{name: "vault-token", prefixes: oneOf("hvs."), body: segs(run(b64url, 90, 255)), keep: -1},
	{name: "vault-token", prefixes: oneOf("hvb."), body: segs(run(b64url, 130, 400)), keep: -1},
	{name: "grafana-token", prefixes: oneOf("glc_"), body: segs(run(b64, 32, 400)), keep: -1},
	{name: "grafana-token", prefixes: oneOf("glsa_"), body: segs(exact(alnum, 32), lit("_"), exact(hexa, 8)), keep: -1},
	{name: "newrelic-key", prefixes: oneOf("NRAK-"), body: segs(exact(upperNum, 27)), keep: -1},
	{name: "newrelic-key", prefixes: oneOf("NRII- NRJS- NRRA-"), body: segs(run(cls("A-Za-z0-9-"), 19, 42)), keep: -1},
	{name: "linear-api-key", prefixes: oneOf("lin_api_"), body: segs(exact(alnum, 40)), keep: -1},
	{name: "doppler-token", prefixes: oneOf("dp.pt. dp.st. dp.ct. dp.sa. dp.scim. dp.audit."), body: segs(run(cls("A-Za-z0-9._-"), 40, 120)), keep: -1, check: notDotEnd},
	{name: "pulumi-token", prefixes: oneOf("pul-"), body: segs(exact(hexl, 40)), keep: -1},
	{name: "age-secret-key", prefixes: oneOf("AGE-SECRET-KEY-1"), body: segs(exact(bech32, 58)), keep: -1},
	{name: "mailgun-key", prefixes: oneOf("key-"), body: segs(exact(hexl, 32)), keep: -1},
	{name: "twilio-api-key", prefixes: oneOf("SK"), next: hexl, body: segs(exact(hexl, 32)), keep: -1},
	{name: "atlassian-token", prefixes: oneOf("ATATT3"), body: segs(run(cls("A-Za-z0-9_=-"), 150, 300)), keep: -1},
	{name: "postman-key", prefixes: oneOf("PMAK-"), body: segs(exact(hexa, 24), lit("-"), exact(hexa, 34)), keep: -1},
	{name: "heroku-key", prefixes: oneOf("HRKU-"), body: segs(run(b64url, 40, 80)), keep: -1},
	{name: "sentry-token", prefixes: oneOf("sntrys_"), body: segs(run(cls("A-Za-z0-9+/=_"), 50, 1000)), keep: -1},
	{name: "sentry-token", prefixes: oneOf("sntryu_"), body: segs(exact(hexl, 64)), keep: -1},
	{name: "supabase-token", prefixes: oneOf("sbp_"), body: segs(exact(hexl, 40)), keep: -1},
	{name: "supabase-token", prefixes: oneOf("sb_secret_"), body: segs(run(b64url, 20, 64)), keep: -1},
	{name: "flyio-token", prefixes: oneOf("fo1_"), body: segs(run(b64url, 40, 64)), keep: -1},
	{name: "flyio-token", prefixes: oneOf("fm1r_ fm1a_ fm2_"), body: segs(run(cls("A-Za-z0-9+/=,_-"), 64, 4000)), keep: -1},
	{name: "alibaba-key-id", prefixes: oneOf("LTAI"), body: segs(run(alnum, 12, 20)), keep: -1, check: func(t []byte) bool { return len(t) == 16 || len(t) == 24 }},
	{name: "shippo-token", prefixes: oneOf("shippo_live_ shippo_test_"), body: segs(exact(hexl, 40)), keep: -1},
	{name: "square-token", prefixes: oneOf("sq0atp-"), body: segs(exact(b64url, 22)), keep: -1},
	{name: "square-token", prefixes: oneOf("sq0csp-"), body: segs(exact(b64url, 43)), keep: -1},
	{name: "square-token", prefixes: oneOf("EAAA"), body: segs(exact(b64url, 60)), keep: -1},
	{name: "planetscale-token", prefixes: oneOf("pscale_tkn_ pscale_pw_ pscale_oauth_"), body: segs(run(cls("A-Za-z0-9_=.-"), 32, 64)), keep: -1, check: notDotEnd},
	{name: "notion-token", prefixes: oneOf("ntn_"), body: segs(exact(alnum, 46)), keep: -1, check: func(t []byte) bool { return firstDigits(11)(t[4:]) },
		gen: func(r *rand.Rand, _ string) string {
			return fmt.Sprintf("%011d", r.Int64N(1e11)) + fromSegs(r, segs(exact(alnum, 35)))
		}},
	{name: "notion-token", prefixes: oneOf("secret_"), body: segs(exact(alnum, 43)), keep: -1, check: func(t []byte) bool { return hasDigit(t[7:]) && hasUpperLower(t[7:]) }},
	{name: "dropbox-token", prefixes: oneOf("sl."), next: cls("A-Za-z0-9_-"), body: segs(run(cls("A-Za-z0-9._-"), 130, 1500)), keep: -1, check: notDotEnd},
	{name: "onepassword-token", prefixes: oneOf("ops_eyJ"), body: segs(run(b64eq, 100, 2000)), keep: 4},
	{name: "adobe-client-secret", prefixes: oneOf("p8e-"), body: segs(exact(alnum, 32)), keep: -1},
	{name: "clojars-token", prefixes: oneOf("CLOJARS_"), body: segs(exact(alnum, 60)), keep: -1},
	{name: "dynatrace-token", prefixes: oneOf("dt0c01."), body: segs(exact(upperNum, 24), lit("."), exact(upperNum, 64)), keep: -1},
	{name: "easypost-key", prefixes: oneOf("EZAK EZTK"), body: segs(exact(alnum, 54)), keep: -1},
	{name: "flutterwave-key", prefixes: oneOf("FLWSECK_TEST- FLWSECK-"), body: segs(exact(hexa, 32), lit("-X")), keep: -1},
	{name: "frameio-token", prefixes: oneOf("fio-u-"), body: segs(exact(cls("A-Za-z0-9_=-"), 64)), keep: -1},
	{name: "infracost-key", prefixes: oneOf("ico-"), body: segs(exact(alnum, 32)), keep: -1},
	{name: "openshift-token", prefixes: oneOf("sha256~"), body: segs(exact(b64url, 43)), keep: -1},
	{name: "prefect-token", prefixes: oneOf("pnu_"), body: segs(exact(alnum, 36)), keep: -1},
	{name: "readme-key", prefixes: oneOf("rdme_"), body: segs(exact(alnum, 70)), keep: -1},
	{name: "rubygems-key", prefixes: oneOf("rubygems_"), body: segs(exact(hexl, 48)), keep: -1},
	{name: "scalingo-token", prefixes: oneOf("tk-us-"), body: segs(exact(b64url, 48)), keep: -1},
	{name: "settlemint-token", prefixes: oneOf("sm_pat_ sm_aat_ sm_sat_"), body: segs(exact(alnum, 16)), keep: -1},
	{name: "sourcegraph-token", prefixes: oneOf("sgp_"), body: segs(run(cls("A-Za-z0-9_"), 40, 80)), keep: -1},
	{name: "artifactory-key", prefixes: oneOf("AKCp"), body: segs(exact(alnum, 69)), keep: -1},
	{name: "perplexity-key", prefixes: oneOf("pplx-"), body: segs(exact(alnum, 48)), keep: -1},
	{name: "groq-key", prefixes: oneOf("gsk_"), body: segs(exact(alnum, 52)), keep: -1},
	{name: "defined-networking-key", prefixes: oneOf("dnkey-"), body: segs(exact(cls("A-Za-z0-9=_"), 26), lit("-"), exact(cls("A-Za-z0-9=_"), 52)), keep: -1},
	{name: "google-oauth-secret", prefixes: oneOf("GOCSPX-"), body: segs(exact(b64url, 28)), keep: -1},
	{name: "google-oauth-token", prefixes: oneOf("ya29."), body: segs(run(b64url, 30, 2048)), keep: -1},
	{name: "openrouter-key", prefixes: oneOf("sk-or-v1-"), body: segs(exact(hexl, 64)), keep: -1},
	{name: "replicate-token", prefixes: oneOf("r8_"), next: alnum, body: segs(exact(alnum, 37)), keep: -1},
	{name: "nvidia-key", prefixes: oneOf("nvapi-"), body: segs(exact(b64url, 64)), keep: -1},
	{name: "pinecone-key", prefixes: oneOf("pcsk_"), body: segs(run(cls("A-Za-z0-9_"), 40, 120)), keep: -1},
	{name: "langsmith-key", prefixes: oneOf("lsv2_pt_ lsv2_sk_"), body: segs(exact(hexl, 32), lit("_"), exact(hexl, 10)), keep: -1},
	{name: "docker-swarm-token", prefixes: oneOf("SWMTKN-1-"), body: segs(exact(cls("a-z0-9"), 50), lit("-"), exact(cls("a-z0-9"), 25)), keep: -1,
		check: notExample("3pu6hszjas19xyp7ghgosyx9k8atbfcr8p2is99znpy26u2lkl", "1h8aps2yszaiqmz2l3oc5392pgk8e49qhx2aj3nyv0ui0hez2a")},
	{name: "onepassword-secret-key", prefixes: oneOf("A3-"), next: upperNum, body: segs(run(cls("A-Z0-9-"), 35, 36)), keep: -1, check: onePasswordKey,
		gen: func(r *rand.Rand, _ string) string {
			return strings.Join([]string{fromSegs(r, segs(exact(upperNum, 6))), fromSegs(r, segs(exact(upperNum, 11))), fromSegs(r, segs(exact(upperNum, 5))), fromSegs(r, segs(exact(upperNum, 5))), fromSegs(r, segs(exact(upperNum, 5)))}, "-")
		}},
	{name: "aws-access-key-id", prefixes: oneOf("A3T"), next: upperNum, body: segs(exact(upperNum, 17)), keep: -1},
	{name: "aws-bedrock-key", prefixes: oneOf("ABSK"), body: segs(run(b64, 109, 269)), keep: -1},
	{name: "aws-bedrock-key", prefixes: oneOf("bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t"), body: segs(run(b64eq, 20, 4000)), keep: 16},
	{name: "clickhouse-key", prefixes: oneOf("4b1d"), body: segs(exact(alnum, 38)), keep: -1},
	{name: "duffel-token", prefixes: oneOf("duffel_test_ duffel_live_"), body: segs(exact(cls("A-Za-z0-9_=-"), 43)), keep: -1},
	{name: "facebook-page-token", prefixes: oneOf("EAAM EAAC"), body: segs(run(alnum, 100, 400)), keep: -1},
	{name: "gitlab-token", prefixes: oneOf("_gitlab_session="), body: segs(exact(cls("0-9a-z"), 32)), keep: -1},
	{name: "harness-token", prefixes: oneOf("pat. sat."), body: segs(exact(b64url, 22), lit("."), exact(alnum, 24), lit("."), exact(alnum, 20)), keep: -1},
	{name: "octopus-key", prefixes: oneOf("API-"), body: segs(exact(upperNum, 26)), keep: -1},
	{name: "sendinblue-key", prefixes: oneOf("xkeysib-"), body: segs(exact(hexl, 64), lit("-"), exact(alnum, 16)), keep: -1},
	{name: "typeform-token", prefixes: oneOf("tfp_"), body: segs(exact(cls("A-Za-z0-9_.=-"), 59)), keep: -1},
	{name: "intra42-secret", prefixes: oneOf("s-s4t2ud- s-s4t2af-"), body: segs(exact(hexa, 64)), keep: -1},
	{name: "artifactory-key", prefixes: oneOf("cmVmd"), body: segs(exact(alnum, 59)), keep: -1},
	{name: "cloudflare-origin-ca-key", prefixes: oneOf("v1.0-"), body: segs(exact(hexl, 24), lit("-"), exact(hexl, 146)), keep: -1},
	{name: "mapbox-secret-token", prefixes: oneOf("sk.eyJ"), body: segs(run(b64url, 50, 400), lit("."), exact(b64url, 22)), keep: 3},
}

// notExample refuses the values a provider's documentation shows (Docker's
// API reference shows its swarm's join tokens).
func notExample(examples ...string) func([]byte) bool {
	return func(t []byte) bool {
		for _, e := range examples {
			if bytes.Contains(t, []byte(e)) {
				return false
			}
		}
		return true
	}
}

// onePasswordKey: a 1Password account's secret key, "A3-" and five or
// six groups of upper-case letters and digits.
func onePasswordKey(t []byte) bool {
	var lens []int
	for _, g := range bytes.Split(t[3:], []byte("-")) {
		lens = append(lens, len(g))
	}
	return slices.Equal(lens, []int{6, 11, 5, 5, 5}) || slices.Equal(lens, []int{6, 6, 5, 5, 5, 5})
}

// teamsWebhook is a Microsoft Teams incoming webhook's path.
var teamsWebhook = &rule{
	name: "teams-webhook", anchors: oneOf("webhook.office.com/webhookb2/"),
	find: func(c []byte, at, n int, out []span) []span {
		e := match(c, at+n, segs(run(cls("A-Za-z0-9@/-"), 60, 300)))
		if e < 0 || !plausible(c[at+n:e]) || !bytes.Contains(c[at+n:e], []byte("/IncomingWebhook/")) {
			return out
		}
		return append(out, span{s: at + n, e: e})
	},
}

// maxmind is a MaxMind license key: 6 bytes, '_', 29 bytes and "_mmk".
var maxmind = &rule{
	name: "maxmind-license-key", anchors: oneOf("_mmk"),
	find: func(c []byte, at, n int, out []span) []span {
		s := at - 36
		if s < 0 || !boundary(c, s) || match(c, s, segs(exact(alnum, 6), lit("_"), exact(alnum, 29))) != at ||
			within(c, at+n) && alnum[c[at+n]] || !plausible(c[s:at]) {
			return out
		}
		return append(out, span{s: s, e: at + n})
	},
}

// notDotEnd refuses a token that ends with its alphabet's '.' (a sentence's
// full stop after a token is not part of it).
func notDotEnd(t []byte) bool { return t[len(t)-1] != '.' }

// builtin are the rules of every family, tokens then context rules.
var builtin = func() []*rule {
	var rs []*rule
	for _, t := range tokens {
		rs = append(rs, t.rule())
	}
	return append(rs, awsKeyID, awsSecret, telegram, twilioAuth, azureAccountKey, azureADSecret,
		connPassword, urlPassword, jwt, slackWebhook, discordWebhook, terraform, vaultLegacy, discordBot, okta,
		teamsWebhook, maxmind)
}()

// awsKeyID is an AWS access key id; the secret key beside it, within
// awsNear bytes, is masked too (as aws-secret-key).
var awsKeyID = &rule{
	name: "aws-access-key-id", anchors: oneOf("AKIA ASIA ABIA ACCA"),
	find: func(c []byte, at, n int, out []span) []span {
		e := match(c, at+n, segs(exact(base32, 16)))
		if !boundary(c, at) || e < 0 || !plausible(c[at+n:e]) {
			return out
		}
		out = append(out, span{s: at, e: e, keep: n})
		for p := max(at-awsNear, 0); p < min(e+awsNear, len(c)); p++ {
			if p > 0 && b64eq[c[p-1]] || !b64[c[p]] {
				continue
			}
			if q := p + 40; q <= len(c) && match(c, p, segs(exact(b64, 40))) == q && awsSecretShape(c[p:q]) {
				out = append(out, span{s: p, e: q, family: "aws-secret-key"})
			}
		}
		return out
	},
}

const awsNear = 256

// awsSecretShape: 40 random base64 bytes hold both cases and a digit or
// a '/' or '+' (a git object id, hex, does not), and are not an example.
func awsSecretShape(b []byte) bool {
	return hasUpperLower(b) && bytes.ContainsAny(b, "0123456789/+") && plausible(b)
}

// separators may stand between a name and its value.
var separators = cls(" \t\r\n\"'`:=>,")

// valueAfter skips separators (and a YAML "value:" after a name) from p,
// within 40 bytes, and returns where a value starts.
func valueAfter(c []byte, p int) int {
	lim := min(p+40, len(c))
	for p < lim && separators[c[p]] {
		p++
	}
	if hasAt(c, p, "value", true) {
		p += 5
		for p < lim && separators[c[p]] {
			p++
		}
	}
	return p
}

// named is a family whose value is told by the name before it: the name
// (an anchor, in any letter case, and up to 16 more bytes of it), then
// separators, then a value of body's shape.
func named(family, names string, body []seg, check func([]byte) bool) *rule {
	return &rule{name: family, fold: true, anchors: oneOf(names), find: func(c []byte, at, n int, out []span) []span {
		p := at + n
		for k := 0; k < 16 && within(c, p) && (alnum[c[p]] || c[p] == '_' || c[p] == '-'); k++ {
			p++
		}
		p = valueAfter(c, p)
		e := match(c, p, body)
		if e < 0 || !plausible(c[p:e]) || check != nil && !check(c[p:e]) {
			return out
		}
		return append(out, span{s: p, e: e})
	}}
}

var (
	// vaultLegacy is a Vault token of before 1.10 ("s." and 24 bytes),
	// too short to tell from code without its name.
	vaultLegacy = named("vault-token", "vault_token vault-token vaulttoken", segs(lit("s."), exact(alnum, 24)), func(v []byte) bool {
		return hasUpperLower(v) && hasDigit(v)
	})
	// discordBot is a Discord bot token (the bot's id in base64, a
	// timestamp, an HMAC), named as Discord's.
	discordBot = named("discord-bot-token", "discord", segs(run(b64url, 24, 26), lit("."), exact(b64url, 6), lit("."), run(b64url, 27, 38)), func(v []byte) bool {
		return bytes.IndexByte([]byte("MNO"), v[0]) >= 0
	})
	// okta is an Okta API token, named as Okta's.
	okta = named("okta-token", "okta", segs(lit("00"), exact(b64url, 40)), func(v []byte) bool {
		return hasUpperLower(v)
	})
)

// awsSecret is an AWS secret access key after its name.
var awsSecret = &rule{
	name: "aws-secret-key", fold: true,
	anchors: oneOf("secret_access_key secretaccesskey secret-access-key aws_secret_key awssecretkey"),
	find: func(c []byte, at, n int, out []span) []span {
		p := valueAfter(c, at+n)
		e := match(c, p, segs(exact(b64, 40)))
		if e < 0 || within(c, e) && c[e] == '=' || !awsSecretShape(c[p:e]) {
			return out
		}
		return append(out, span{s: p, e: e})
	},
}

// telegram is a bot token: the bot's id, ':' and 35 bytes from "AA".
var telegram = &rule{
	name: "telegram-bot-token", anchors: oneOf(":AA"), next: b64url,
	find: func(c []byte, at, n int, out []span) []span {
		s := at
		for s > 0 && at-s < 11 && digit[c[s-1]] {
			s--
		}
		if d := at - s; d < 8 || d > 10 || !(boundary(c, s) || s >= 3 && string(c[s-3:s]) == "bot") {
			return out
		}
		e := match(c, at+1, segs(exact(b64url, 35)))
		if e < 0 || !plausible(c[at+3:e]) {
			return out
		}
		return append(out, span{s: s, e: e, keep: at + 1 - s})
	},
}

// twilioAuth is the 32-hex auth token named near an account SID.
var twilioAuth = &rule{
	name: "twilio-auth-token", anchors: oneOf("AC"), next: hexl,
	find: func(c []byte, at, n int, out []span) []span {
		e := match(c, at+2, segs(exact(hexl, 32)))
		if !boundary(c, at) || e < 0 {
			return out
		}
		for p := max(at-awsNear, 0); p < min(e+awsNear, len(c)); p++ {
			if p == at+2 || p > 0 && alnum[c[p-1]] || !hexl[c[p]] {
				continue
			}
			q := match(c, p, segs(exact(hexl, 32)))
			if q < 0 || !plausible(c[p:q]) {
				continue
			}
			name := bytes.ToLower(c[max(p-40, 0):p])
			if bytes.Contains(name, []byte("auth")) || bytes.Contains(name, []byte("token")) || bytes.Contains(name, []byte("secret")) {
				out = append(out, span{s: p, e: q})
			}
		}
		return out
	},
}

// azureAccountKey is the key in an Azure connection string.
var azureAccountKey = &rule{
	name: "azure-account-key", fold: true, anchors: oneOf("AccountKey= SharedAccessKey="),
	find: func(c []byte, at, n int, out []span) []span {
		e := match(c, at+n, segs(run(b64eq, 32, 512)))
		if e < 0 || !plausible(c[at+n:e]) || !hasUpperLower(c[at+n:e]) {
			return out
		}
		return append(out, span{s: at + n, e: e})
	},
}

var adHead, adBody = cls("A-Za-z0-9_~."), cls("A-Za-z0-9_~.-")

// azureADSecret is an Entra ID (Azure AD) client secret: three bytes, a
// digit, "Q~" and 31 to 34 more.
var azureADSecret = &rule{
	name: "azure-ad-client-secret", anchors: oneOf("0Q~ 1Q~ 2Q~ 3Q~ 4Q~ 5Q~ 6Q~ 7Q~ 8Q~ 9Q~"), next: adBody,
	find: func(c []byte, at, n int, out []span) []span {
		s := at - 3
		if s < 0 || !adHead[c[s]] || !adHead[c[s+1]] || !adHead[c[s+2]] || s > 0 && adBody[c[s-1]] && !escaped(c, s) {
			return out
		}
		e := match(c, at+n, segs(run(adBody, 31, 34)))
		if e < 0 || !plausible(c[at+n:e]) {
			return out
		}
		return append(out, span{s: s, e: e})
	},
}

// placeholderPassword reports whether a password is a stand-in: a
// template or variable, a word that names what goes there, or one byte
// repeated.
func placeholderPassword(p []byte) bool {
	l := strings.ToLower(string(p))
	switch l {
	case "password", "passwd", "pass", "pwd", "pw", "secret", "mypassword", "yourpassword", "your_password",
		"your-password", "changeme", "change_me", "user", "username", "token", "null", "none", "nil", "true", "false",
		"opensesame", "open sesame": // RFC 7617's example
		return true
	}
	if strings.Trim(l, l[:1]) == "" {
		return true
	}
	for _, pre := range []string{"$", "{{", "{%", "<", "%(", "%s", "[", "#{", "@", "("} {
		if strings.HasPrefix(l, pre) {
			return true
		}
	}
	return !plausible(p)
}

// connPassword is Password= or Pwd= in a connection string: after ';' or
// the string's start, in a string with other "key=value;" parts.
var connPassword = &rule{
	name: "connection-string-password", fold: true, anchors: oneOf("password= pwd="),
	find: func(c []byte, at, n int, out []span) []span {
		if at > 0 && !bytes.ContainsRune([]byte("; \t\"'\n"), rune(c[at-1])) {
			return out
		}
		s := at + n
		for s < len(c) && c[s] == ' ' {
			s++
		}
		e := s
		switch {
		case within(c, s) && c[s] == '{':
			e = bytes.IndexByte(c[s:min(s+130, len(c))], '}')
			if e < 0 {
				return out
			}
			s, e = s+1, s+e
		default:
			for e < len(c) && e-s <= 128 && !bytes.ContainsRune([]byte(";\"'\n\r<"), rune(c[e])) {
				e++
			}
			for e > s && (c[e-1] == ' ' || c[e-1] == '\t') {
				e--
			}
		}
		if e == s || e-s > 128 || placeholderPassword(c[s:e]) {
			return out
		}
		line := c[max(at-256, 0):at]
		if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
			line = line[i+1:]
		}
		if !bytes.Contains(line, []byte(";")) && !(within(c, e) && c[e] == ';') && !(within(c, e+1) && c[e] == '}' && c[e+1] == ';') {
			return out
		}
		return append(out, span{s: s, e: e})
	},
}

// weakURLPassword reports whether a URL's password is a stand-in rather
// than a secret: a placeholder, shorter than 6 bytes, the user name again,
// or a word that says "password" (as tests and documentation write them),
// its %-escapes decoded first.
func weakURLPassword(user, pw []byte) bool {
	dec, err := url.PathUnescape(string(pw))
	if err != nil {
		dec = string(pw)
	}
	if len(dec) < 6 || dec == string(user) || placeholderPassword([]byte(dec)) {
		return true
	}
	return exampleWords(strings.ToLower(dec))
}

// exampleWords reports whether a lower-cased password is made of the words
// examples are made of ("mysecretpassword", "password123", "super_secret",
// "pa%2Fssword") with at most two other letters and four digits or marks
// besides: one with more ("Passw0rdXk9v", "Swordfish99", "PgSecret_x8q") is
// a person's and masked. A word inside a password never makes it an
// example.
func exampleWords(l string) bool {
	letters := strings.Map(func(c rune) rune {
		if unicode.IsLetter(c) {
			return c
		}
		return -1
	}, l)
	for _, w := range []string{"password", "passwd", "secret", "changeme", "example", "super", "admin", "your", "pass", "word", "test", "pwd", "my", "db"} {
		letters = strings.ReplaceAll(letters, w, "")
	}
	others := 0
	for _, c := range l {
		if !unicode.IsLetter(c) {
			others++
		}
	}
	return len(letters) <= 2 && others <= 4
}

// schemeEnds are "://" after each byte a URL scheme may end with, and
// ":\/\/", the same with its slashes escaped as JSON encoders may write them.
func schemeEnds() []string {
	var as []string
	for _, c := range "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" {
		as = append(as, string(c)+"://", string(c)+`:\/\/`)
	}
	return as
}

// urlPassword is the password in scheme://user:password@host.
var urlPassword = &rule{
	// Anchored with the scheme's last byte, so comments' "//" and
	// YAML's "key:" are no lead.
	name: "url-password", anchors: schemeEnds(),
	find: func(c []byte, at, n int, out []span) []span {
		at, n = at+1, n-1
		s := at
		for s > 0 && at-s < 32 && (alnum[c[s-1]] || c[s-1] == '+' || c[s-1] == '.' || c[s-1] == '-') {
			s--
		}
		if at-s < 2 || !isLetter(c[s]) {
			return out
		}
		end := at + n
		for end < len(c) && end-at < 512 && !bytes.ContainsRune([]byte("/?#\"'<> \t\r\n`\\"), rune(c[end])) {
			end++
		}
		auth := c[at+n : end]
		a := bytes.LastIndexByte(auth, '@')
		if a < 0 || a+1 >= len(auth) || !(alnum[auth[a+1]] || auth[a+1] == '[') {
			return out
		}
		colon := bytes.IndexByte(auth[:a], ':')
		if colon < 0 {
			return out
		}
		pw := auth[colon+1 : a]
		if len(pw) > 256 || weakURLPassword(auth[:colon], pw) {
			return out
		}
		p := at + n + colon + 1
		return append(out, span{s: p, e: p + len(pw)})
	},
}

// jwt is a JSON Web Token: header and payload (base64url JSON objects,
// "eyJ") and a signature. It is masked whole, keeping "eyJ". The three
// parts' bounds (300, 3500, 700 bytes) keep the whole token within a
// scan's look ahead.
var jwt = &rule{
	name: "jwt", anchors: oneOf("eyJ"), next: b64url,
	find: func(c []byte, at, n int, out []span) []span {
		if at > 0 && b64url[c[at-1]] && !escaped(c, at) {
			return out
		}
		h := match(c, at, segs(run(b64url, 10, 300)))
		e := match(c, at, segs(run(b64url, 10, 300), lit(".eyJ"), run(b64url, 7, 3500), lit("."), run(b64url, 0, 700)))
		if h < 0 || e < 0 {
			return out
		}
		hdr, err := base64.RawURLEncoding.DecodeString(string(c[at:h]))
		if err != nil || !bytes.Contains(hdr, []byte(`"alg"`)) && !bytes.Contains(hdr, []byte(`"typ"`)) {
			return out
		}
		return append(out, span{s: at, e: e, keep: n})
	},
}

// slackWebhook is a Slack incoming webhook's path.
var slackWebhook = &rule{
	name: "slack-webhook", anchors: oneOf("hooks.slack.com/services/ hooks.slack.com/workflows/ hooks.slack.com/triggers/"),
	find: func(c []byte, at, n int, out []span) []span {
		e := match(c, at+n, segs(run(cls("A-Za-z0-9/_-"), 20, 200)))
		if e < 0 || !plausible(c[at+n:e]) {
			return out
		}
		return append(out, span{s: at + n, e: e})
	},
}

// discordWebhook is a Discord webhook's token, after its id.
var discordWebhook = &rule{
	name: "discord-webhook", anchors: oneOf("discord.com/api/webhooks/ discordapp.com/api/webhooks/"),
	find: func(c []byte, at, n int, out []span) []span {
		p := match(c, at+n, segs(run(digit, 17, 20), lit("/")))
		if p < 0 {
			return out
		}
		e := match(c, p, segs(run(b64url, 60, 80)))
		if e < 0 || !plausible(c[p:e]) {
			return out
		}
		return append(out, span{s: p, e: e})
	},
}

// terraform is a Terraform Cloud / Enterprise API token.
var terraform = &rule{
	name: "terraform-token", anchors: oneOf(".atlasv1."),
	find: func(c []byte, at, n int, out []span) []span {
		s := at - 14
		if s < 0 || match(c, s, segs(exact(alnum, 14))) != at || !boundary(c, s) {
			return out
		}
		e := match(c, at+n, segs(run(cls("A-Za-z0-9_=-"), 60, 70)))
		if e < 0 || !plausible(c[at+n:e]) {
			return out
		}
		return append(out, span{s: s, e: e})
	},
}

// genericRule finds `name = value` assignments whose name says secret and
// whose value looks random (secrets.generic).
var genericRule = &rule{
	name: policy.GenericSecret, fold: true,
	anchors: oneOf("api_key apikey api-key secret token passwd password access_key auth_key"),
	find: func(c []byte, at, n int, out []span) []span {
		p := at + n
		for k := 0; k < 24 && within(c, p) && (alnum[c[p]] || c[p] == '_' || c[p] == '-'); k++ {
			p++
		}
		if within(c, p) && bytes.IndexByte([]byte("\"'`"), c[p]) >= 0 {
			p++
		}
		for within(c, p) && (c[p] == ' ' || c[p] == '\t') {
			p++
		}
		switch {
		case hasAt(c, p, ":=", false), hasAt(c, p, "=>", false):
			p += 2
		case within(c, p) && (c[p] == '=' || c[p] == ':'):
			p++
		default:
			return out
		}
		for within(c, p) && (c[p] == ' ' || c[p] == '\t') {
			p++
		}
		var quote byte
		if within(c, p) && bytes.IndexByte([]byte("\"'`"), c[p]) >= 0 {
			quote = c[p]
			p++
		}
		e := match(c, p, segs(run(cls("A-Za-z0-9+/_.=~-"), 16, 128)))
		if e < 0 {
			return out
		}
		if quote != 0 && !(within(c, e) && c[e] == quote) || quote == 0 && within(c, e) && !bytes.ContainsRune([]byte(" \t\r\n;,"), rune(c[e])) {
			return out
		}
		v := c[p:e]
		if bytes.Contains(v, []byte("...")) || !hasDigit(v) || !bytes.ContainsFunc(v, func(r rune) bool { return isLetter(byte(r)) }) || entropy(v) < 3.5 || !plausible(v) {
			return out
		}
		return append(out, span{s: p, e: e})
	},
}

// entropy is the Shannon entropy of b's bytes, in bits per byte.
func entropy(b []byte) float64 {
	var n [256]int
	for _, c := range b {
		n[c]++
	}
	h := 0.0
	for _, k := range n {
		if k > 0 {
			p := float64(k) / float64(len(b))
			h -= p * math.Log2(p)
		}
	}
	return h
}

// customRule makes a policy's own rule: a match of its regex that holds
// the anchor, found within policy.MaxSecretMatch bytes of it.
func customRule(pr policy.SecretRule) (*rule, error) {
	re := pr.Re
	if re == nil {
		return nil, fmt.Errorf("sniff: secrets rule %q is not compiled (load the policy with policy.Parse)", pr.Name)
	}
	var short []string
	for _, a := range pr.Anchors {
		if len(a) < 4 {
			short = append(short, a)
		}
	}
	r := &rule{name: pr.Name, anchors: pr.Anchors, find: func(c []byte, at, n int, out []span) []span {
		ws, we := max(at-policy.MaxSecretMatch, 0), min(at+n+policy.MaxSecretMatch, len(c))
		for _, m := range re.FindAllSubmatchIndex(c[ws:we], -1) {
			s, e := ws+m[0], ws+m[1]
			if s > at || e < at+n || e-s > policy.MaxSecretMatch {
				continue
			}
			if len(m) >= 4 && m[2] >= 0 {
				s, e = ws+m[2], ws+m[3]
			}
			if e > s {
				out = append(out, span{s: s, e: e, keep: min(pr.Keep, e-s)})
			}
		}
		return out
	}}
	if len(short) > 0 {
		// A 3-byte anchor may be followed by anything.
		var any class
		for i := range any {
			any[i] = true
		}
		r.next = &any
	}
	return r, nil
}

// A Sample is a freshly generated credential of one family, for tests
// (here and end to end): Value is text to place in a file as it would be
// written (with its context, for the families known by it), Secret the
// part of Value that masking hides (all of it but the kept prefix).
type Sample struct {
	Family string
	Value  string
	Secret string
}

// SampleCredentials returns one valid credential of every family, made
// from seed: test data with the structure and checksum of the real thing,
// never a real secret.
func SampleCredentials(seed int64) []Sample {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	var out []Sample
	seen := map[string]bool{"aws-access-key-id": true} // made below, with its secret's neighbour
	for _, t := range tokens {
		if seen[t.name] {
			continue
		}
		seen[t.name] = true
		p := t.prefixes[r.IntN(len(t.prefixes))]
		if t.next != nil && len(p) < 4 {
			p = t.prefixes[0]
		}
		v := t.sample(r, p)
		keep := len(p)
		if t.keep >= 0 {
			keep = t.keep
		}
		out = append(out, Sample{t.name, v, v[keep:]})
	}
	rnd := func(c *class, n int) string { return fromSegs(r, segs(exact(c, n))) }
	b64key := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	awsSecretValue := func() string {
		for {
			s := b64key(30)
			if awsSecretShape([]byte(s)) {
				return s
			}
		}
	}
	id := "AKIA" + rnd(base32, 16)
	add := func(fam, v, secret string) { out = append(out, Sample{fam, v, secret}) }
	add("aws-access-key-id", id, id[4:])
	sec := awsSecretValue()
	add("aws-secret-key", "aws_secret_access_key = "+sec, sec)
	bot := fmt.Sprintf("%d", 100000000+r.IntN(900000000))
	tg := "AA" + rnd(b64url, 33)
	add("telegram-bot-token", bot+":"+tg, tg)
	tw := rnd(hexl, 32)
	add("twilio-auth-token", "TWILIO_ACCOUNT_SID=AC"+rnd(hexl, 32)+" TWILIO_AUTH_TOKEN="+tw, tw)
	ak := b64key(64)
	add("azure-account-key", "DefaultEndpointsProtocol=https;AccountName=acct"+rnd(hexl, 6)+";AccountKey="+ak+";EndpointSuffix=core.windows.net", ak)
	ad := rnd(alnum, 3) + fmt.Sprint(r.IntN(10)) + "Q~" + rnd(alnum, 34)
	add("azure-ad-client-secret", ad, ad)
	pw := rnd(alnum, 20)
	add("connection-string-password", "Server=db.internal;Database=app;User Id=app;Password="+pw+";", pw)
	up := rnd(alnum, 18)
	add("url-password", "postgres://app:"+up+"@db.internal:5432/app", up)
	hdr := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	pay := base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"sub":"%s","iat":%d}`, rnd(alnum, 12), 1.7e9+r.IntN(1e8))))
	tok := hdr + "." + pay + "." + rnd(b64url, 43)
	add("jwt", tok, tok[3:])
	sw := "T" + rnd(upperNum, 10) + "/B" + rnd(upperNum, 10) + "/" + rnd(alnum, 24)
	add("slack-webhook", "https://hooks.slack.com/services/"+sw, sw)
	dw := rnd(b64url, 68)
	add("discord-webhook", fmt.Sprintf("https://discord.com/api/webhooks/%d/%s", 100000000000000000+r.Int64N(800000000000000000), dw), dw)
	db := "M" + rnd(b64url, 25) + "." + rnd(b64url, 6) + "." + rnd(b64url, 38)
	add("discord-bot-token", "DISCORD_BOT_TOKEN="+db, db)
	ok := "00" + rnd(alnum, 40)
	add("okta-token", "OKTA_API_TOKEN: "+ok, ok)
	tw2 := fmt.Sprintf("%s-%s-%s-%s-%s@%s-%s-%s-%s-%s/IncomingWebhook/%s/%s-%s-%s-%s-%s",
		rnd(hexl, 8), rnd(hexl, 4), rnd(hexl, 4), rnd(hexl, 4), rnd(hexl, 12), rnd(hexl, 8), rnd(hexl, 4), rnd(hexl, 4), rnd(hexl, 4), rnd(hexl, 12),
		rnd(hexl, 32), rnd(hexl, 8), rnd(hexl, 4), rnd(hexl, 4), rnd(hexl, 4), rnd(hexl, 12))
	add("teams-webhook", "https://acme.webhook.office.com/webhookb2/"+tw2, tw2)
	mm := rnd(alnum, 6) + "_" + rnd(alnum, 29) + "_mmk"
	add("maxmind-license-key", mm, mm)
	tf := rnd(alnum, 14) + ".atlasv1." + rnd(b64url, 67)
	add("terraform-token", tf, tf)
	return out
}
