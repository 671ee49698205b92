package coordination

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestVersionHasAChangelogEntry keeps Version, a semantic version, in step
// with the newest release of CHANGELOG.md.
func TestVersionHasAChangelogEntry(t *testing.T) {
	if !regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`).MatchString(Version) {
		t.Fatalf("Version %q is not a semantic version", Version)
	}
	log, err := os.ReadFile("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	release := regexp.MustCompile(`(?m)^## \[([^\]]+)\]`)
	for _, m := range release.FindAllStringSubmatch(string(log), -1) {
		if m[1] == "Unreleased" {
			continue
		}
		if m[1] != Version {
			t.Fatalf("the newest release in CHANGELOG.md is %s, Version is %s; update one of them", m[1], Version)
		}
		return
	}
	t.Fatalf("CHANGELOG.md has no release heading (## [%s]); add one", Version)
}

func TestLicenseIsApache2(t *testing.T) {
	b, err := os.ReadFile("LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Apache License", "Version 2.0, January 2004", "END OF TERMS AND CONDITIONS"} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("LICENSE lacks %q", want)
		}
	}
}
