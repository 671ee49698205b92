package natsstore

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	path string // PEM file of the CA certificate
}

// newCA makes a self-signed CA and writes its certificate to dir.
func newCA(t testing.TB, dir, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".pem")
	writePEM(t, path, "CERTIFICATE", der)
	return &testCA{cert: cert, key: key, path: path}
}

// issue signs a leaf certificate for 127.0.0.1 and localhost (server or
// client use) and writes the certificate and key to dir.
func (ca *testCA) issue(t testing.TB, dir, name string, client bool) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	usage := x509.ExtKeyUsageServerAuth
	if client {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath = filepath.Join(dir, name+".pem")
	keyPath = filepath.Join(dir, name+"-key.pem")
	writePEM(t, certPath, "CERTIFICATE", der)
	writePEM(t, keyPath, "EC PRIVATE KEY", keyDER)
	return certPath, keyPath
}

// writePEM writes one PEM block to path.
func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// operator is a NATS operator with a system account and one JetStream
// account, for decentralized (JWT) authentication.
type operator struct {
	claims  *jwt.OperatorClaims
	sysPub  string
	sysJWT  string
	accKP   nkeys.KeyPair
	accPub  string
	accJWT  string
	opKP    nkeys.KeyPair
	opToken string
}

// newOperator mints an operator, a system account and a JetStream-enabled
// account.
func newOperator(t testing.TB) *operator {
	t.Helper()
	opKP := mustKP(t, nkeys.CreateOperator)
	opPub, _ := opKP.PublicKey()
	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = "test-operator"
	opToken, err := oc.Encode(opKP)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := jwt.DecodeOperatorClaims(opToken)
	if err != nil {
		t.Fatal(err)
	}
	o := &operator{claims: claims, opKP: opKP, opToken: opToken}
	sysKP := mustKP(t, nkeys.CreateAccount)
	o.sysPub, _ = sysKP.PublicKey()
	sc := jwt.NewAccountClaims(o.sysPub)
	sc.Name = "SYS"
	if o.sysJWT, err = sc.Encode(opKP); err != nil {
		t.Fatal(err)
	}
	o.accKP = mustKP(t, nkeys.CreateAccount)
	o.accPub, _ = o.accKP.PublicKey()
	ac := jwt.NewAccountClaims(o.accPub)
	ac.Name = "APP"
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	if o.accJWT, err = ac.Encode(opKP); err != nil {
		t.Fatal(err)
	}
	return o
}

// resolver returns a memory resolver holding both accounts.
func (o *operator) resolver(t testing.TB) *server.MemAccResolver {
	t.Helper()
	r := &server.MemAccResolver{}
	if err := r.Store(o.sysPub, o.sysJWT); err != nil {
		t.Fatal(err)
	}
	if err := r.Store(o.accPub, o.accJWT); err != nil {
		t.Fatal(err)
	}
	return r
}

// userCreds mints a user of the account signed by signer and writes its
// .creds file to dir.
func (o *operator) userCreds(t testing.TB, dir, name string, signer nkeys.KeyPair) string {
	t.Helper()
	ukp := mustKP(t, nkeys.CreateUser)
	upub, _ := ukp.PublicKey()
	uc := jwt.NewUserClaims(upub)
	uc.Name = name
	tok, err := uc.Encode(signer)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := ukp.Seed()
	creds, err := jwt.FormatUserConfig(tok, seed)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".creds")
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// mustKP creates a key pair.
func mustKP(t testing.TB, create func() (nkeys.KeyPair, error)) nkeys.KeyPair {
	t.Helper()
	kp, err := create()
	if err != nil {
		t.Fatal(err)
	}
	return kp
}
