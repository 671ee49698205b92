package main

import (
	"os"
	"testing"
)

func TestDevNullIsNotATerminal(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Fatalf("%s is reported as a terminal (a character device is not one)", os.DevNull)
	}
	if colorOn(f) {
		t.Fatalf("colour is on for %s", os.DevNull)
	}
}

func TestPaintOnlyWhenOn(t *testing.T) {
	if got := paint(false, green, "OK"); got != "OK" {
		t.Fatalf("paint off = %q, want plain", got)
	}
	if got, want := paint(true, green, "OK"), "\x1b[32mOK\x1b[0m"; got != want {
		t.Fatalf("paint on = %q, want %q", got, want)
	}
}
