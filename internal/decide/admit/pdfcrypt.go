package admit

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/md5"
	"crypto/rc4"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"hash"
)

// A PDF encrypted with an empty user password opens in every reader
// without asking, yet its streams and strings are encrypted in the file,
// where no search of its bytes finds a key. So the standard security
// handler (ISO 32000-2 7.6.4) is run with the empty password: RC4 of 40
// to 128 bits (V1, V2; R2, R3), AES-128 (V4, AESV2; R4) and AES-256 (V5,
// AESV3; R5, R6), each object's key derived as 7.6.3 says, and each
// stream and string decrypted before it is decoded and searched. Every
// /Encrypt dictionary and every /ID the file holds is tried (an updated
// PDF may hold several; which one a reader takes depends on its
// cross-reference table), and a key counts only once it checks against
// the dictionary's /U, so a key is never guessed. A PDF whose user
// password is not empty is not decrypted here: no reader opens it without
// the password, and the text search refuses it as unreadable.

// pdfPad is the padding of a password (7.6.4.3, Algorithm 2).
var pdfPad = []byte("\x28\xbf\x4e\x5e\x4e\x75\x8a\x41\x64\x00\x4e\x56\xff\xfa\x01\x08\x2e\x2e\x00\xb6\xd0\x68\x3e\x80\x2f\x0c\xa9\xfe\x64\x53\x69\x7a")

// Ciphers of streams and strings.
const (
	pdfPlain  = iota // not encrypted (Identity, None)
	pdfRC4           // RC4 with each object's key
	pdfAES128        // AES-128-CBC with each object's key
	pdfAES256        // AES-256-CBC with the file's key
)

// pdfKey is a file key that checked against its dictionary's /U, with the
// ciphers of its streams and strings.
type pdfKey struct {
	key      []byte
	stm, str int
}

// maxPDFEncrypts bounds the /Encrypt entries and /IDs tried, and
// maxPDFKeys the keys each stream and string is decrypted with (every
// decryption also counts against the search's budget): a PDF whose
// dictionaries open with more keys is unreadable.
const (
	maxPDFEncrypts = 64
	maxPDFKeys     = 4
)

// pdfKeys finds the encryption of the PDF in o: encrypted reports a
// standard security handler's dictionary; keys are the file keys the
// empty user password opens (none: a password is needed, or a handler
// not known here). A PDF with more /Encrypt entries or /IDs than are
// tried is encrypted with no key (unreadable), never searched with some.
func pdfKeys(o *pdfObjects) (keys []pdfKey, encrypted bool) {
	b := o.b
	var dicts []pdfDict
	var ids [][]byte
	refs := 0
	for i := 0; ; {
		k := bytes.Index(b[i:], []byte("/Encrypt"))
		if k < 0 {
			break
		}
		i += k + len("/Encrypt")
		if i < len(b) && !isPDFSpace(b[i]) && !isPDFDelim(b[i]) {
			continue
		}
		v, _, ok := pdfValue(b, i)
		if !ok {
			continue
		}
		if refs++; refs > maxPDFEncrypts {
			return nil, true
		}
		if r, isRef := v.(pdfRef); isRef {
			for _, v := range o.values(r) {
				if d, ok := v.(pdfDict); ok {
					dicts = append(dicts, d)
				}
			}
		} else if d, ok := v.(pdfDict); ok {
			dicts = append(dicts, d)
		}
	}
	for i := 0; ; {
		k := bytes.Index(b[i:], []byte("/ID"))
		if k < 0 {
			break
		}
		i += k + len("/ID")
		if i < len(b) && !isPDFSpace(b[i]) && !isPDFDelim(b[i]) {
			continue
		}
		if v, _, ok := pdfValue(b, i); ok {
			if a, ok := v.([]any); ok && len(a) > 0 {
				if id, ok := a[0].([]byte); ok {
					if len(ids) == maxPDFEncrypts {
						return nil, len(dicts) > 0
					}
					ids = append(ids, id)
				}
			}
		}
	}
	if len(ids) == 0 {
		ids = append(ids, nil)
	}
	for _, d := range dicts {
		if _, hasU := d["U"].([]byte); !hasU {
			continue
		}
		encrypted = true
		if f, _ := d["Filter"].(pdfName); f != "Standard" {
			continue
		}
		for _, id := range ids {
			if k, ok := pdfFileKey(d, id); ok {
				keys = appendKey(keys, k)
				if len(d.bytes("O")) == 0 || pdfInt(d, "R", 0) >= 5 {
					break // no /ID in the key
				}
			}
		}
	}
	return keys, encrypted
}

func appendKey(keys []pdfKey, k pdfKey) []pdfKey {
	for _, o := range keys {
		if bytes.Equal(o.key, k.key) && o.stm == k.stm && o.str == k.str {
			return keys
		}
	}
	return append(keys, k)
}

func (d pdfDict) bytes(k pdfName) []byte {
	b, _ := d[k].([]byte)
	return b
}

func pdfInt(d pdfDict, k pdfName, def int64) int64 {
	switch v := d[k].(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	}
	return def
}

// pdfFileKey derives the file key of dictionary d with the empty user
// password and the trailer's first /ID, if it checks against /U.
func pdfFileKey(d pdfDict, id []byte) (pdfKey, bool) {
	v, r := pdfInt(d, "V", 0), pdfInt(d, "R", 0)
	u, o := d.bytes("U"), d.bytes("O")
	k := pdfKey{stm: pdfRC4, str: pdfRC4}
	if v >= 4 {
		k.stm, k.str = cryptFilter(d, "StmF"), cryptFilter(d, "StrF")
	}
	switch {
	case r == 5 || r == 6:
		if len(u) < 48 {
			return k, false
		}
		if !bytes.Equal(pdfHash(r, u[32:40]), u[:32]) {
			return k, false
		}
		ue := d.bytes("UE")
		if len(ue) < 32 {
			return k, false
		}
		c, _ := aes.NewCipher(pdfHash(r, u[40:48]))
		k.key = make([]byte, 32)
		cipher.NewCBCDecrypter(c, make([]byte, 16)).CryptBlocks(k.key, ue[:32])
		return k, true
	case r >= 2 && r <= 4:
		if len(o) < 32 || len(u) < 16 {
			return k, false
		}
		n := 5
		if r >= 3 {
			n = int(pdfInt(d, "Length", 40) / 8)
			if v >= 4 {
				n = 16
			}
			if n < 5 || n > 16 {
				return k, false
			}
		}
		h := md5.New()
		h.Write(pdfPad)
		h.Write(o[:32])
		binary.Write(h, binary.LittleEndian, uint32(pdfInt(d, "P", 0)))
		h.Write(id)
		if m, ok := d["EncryptMetadata"].(bool); r >= 4 && ok && !m {
			h.Write([]byte{0xff, 0xff, 0xff, 0xff})
		}
		sum := h.Sum(nil)
		if r >= 3 {
			for range 50 {
				s := md5.Sum(sum[:n])
				sum = s[:]
			}
		}
		k.key = sum[:n]
		if r == 2 {
			got := make([]byte, 32)
			rc(k.key).XORKeyStream(got, pdfPad)
			return k, len(u) >= 32 && bytes.Equal(got, u[:32])
		}
		s := md5.Sum(append(append([]byte{}, pdfPad...), id...))
		x := s[:]
		for i := range 20 {
			ki := make([]byte, n)
			for j := range ki {
				ki[j] = k.key[j] ^ byte(i)
			}
			rc(ki).XORKeyStream(x, x)
		}
		return k, bytes.Equal(x, u[:16])
	}
	return k, false
}

func rc(key []byte) *rc4.Cipher {
	c, _ := rc4.NewCipher(key)
	return c
}

// cryptFilter is the cipher the crypt filter named by d[which] uses.
func cryptFilter(d pdfDict, which pdfName) int {
	name, _ := d[which].(pdfName)
	if name == "" || name == "Identity" {
		return pdfPlain
	}
	cf, _ := d["CF"].(pdfDict)
	f, _ := cf[name].(pdfDict)
	switch m, _ := f["CFM"].(pdfName); m {
	case "V2":
		return pdfRC4
	case "AESV2":
		return pdfAES128
	case "AESV3":
		return pdfAES256
	}
	return pdfPlain
}

// pdfHash is the hash of the empty password with salt: SHA-256 for R5,
// Algorithm 2.B for R6 (ISO 32000-2 7.6.4.3.4).
func pdfHash(r int64, salt []byte) []byte {
	s := sha256.Sum256(salt)
	k := s[:]
	if r == 5 {
		return k
	}
	for round := 0; ; round++ {
		k1 := bytes.Repeat(k, 64)
		c, _ := aes.NewCipher(k[:16])
		e := make([]byte, len(k1))
		cipher.NewCBCEncrypter(c, k[16:32]).CryptBlocks(e, k1)
		sum := 0
		for _, b := range e[:16] {
			sum += int(b)
		}
		var h hash.Hash
		switch sum % 3 {
		case 0:
			h = sha256.New()
		case 1:
			h = sha512.New384()
		default:
			h = sha512.New()
		}
		h.Write(e)
		k = h.Sum(nil)
		if round >= 63 && int(e[len(e)-1]) <= round+1-32 {
			return k[:32]
		}
	}
}

// decrypt decrypts data, of object num gen, with the cipher c under key
// k: nil when it cannot be (an AES body shorter than its IV).
func (k pdfKey) decrypt(c int, num, gen int64, data []byte) []byte {
	key := k.key
	if c == pdfRC4 || c == pdfAES128 {
		h := md5.New()
		h.Write(k.key)
		h.Write([]byte{byte(num), byte(num >> 8), byte(num >> 16), byte(gen), byte(gen >> 8)})
		if c == pdfAES128 {
			h.Write([]byte("sAlT"))
		}
		key = h.Sum(nil)[:min(len(k.key)+5, 16)]
	}
	switch c {
	case pdfRC4:
		out := make([]byte, len(data))
		rc(key).XORKeyStream(out, data)
		return out
	case pdfAES128, pdfAES256:
		if len(data) < 32 {
			return nil
		}
		b, err := aes.NewCipher(key)
		if err != nil {
			return nil
		}
		n := (len(data) - 16) / 16 * 16
		out := make([]byte, n)
		cipher.NewCBCDecrypter(b, data[:16]).CryptBlocks(out, data[16:16+n])
		if p := int(out[n-1]); p >= 1 && p <= 16 && bytes.Count(out[n-p:], out[n-1:]) == p {
			out = out[:n-p]
		}
		return out
	}
	return nil
}
