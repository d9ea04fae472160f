package version

import (
	"runtime/debug"
	"testing"
)

func TestGetPrefersTheBuildsValue(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v1.2.3-4-gabcdef0"
	if got, want := String("yaz-decode"), "yaz-decode v1.2.3-4-gabcdef0"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	Version = ""
	if got := Get(); got == "" {
		t.Error("Get() with no Version set is empty")
	}
}

func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings []debug.BuildSetting
		want     string
	}{
		{"no vcs", nil, "0.0.0-dev"},
		{"clean", []debug.BuildSetting{{Key: "vcs.revision", Value: "02d05dd8a1b2c3"}, {Key: "vcs.modified", Value: "false"}}, "0.0.0-dev+02d05dd"},
		{"dirty", []debug.BuildSetting{{Key: "vcs.revision", Value: "02d05dd8a1b2c3"}, {Key: "vcs.modified", Value: "true"}}, "0.0.0-dev+02d05dd-dirty"},
		{"short", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}, "0.0.0-dev+abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fromBuildInfo(&debug.BuildInfo{Settings: tc.settings}); got != tc.want {
				t.Errorf("fromBuildInfo(%v) = %q, want %q", tc.settings, got, tc.want)
			}
		})
	}
}
