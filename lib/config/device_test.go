package config

import (
	"testing"
)

// TestDecodeDevice: decode.device takes what yaz-decode --device takes and
// is passed on as it is; anything else is refused with its line.
func TestDecodeDevice(t *testing.T) {
	if d := Default().Decode.Device; d != "auto" {
		t.Errorf("default decode.device = %q, want auto", d)
	}
	for _, ok := range []string{"auto", "cpu", "gpu", "gpu:0", "gpu:12"} {
		c, err := Parse([]byte("[decode]\ndevice = \""+ok+"\""), "config.toml")
		if err != nil || c.Decode.Device != ok {
			t.Errorf("decode.device = %q: %+v, %v", ok, c.Decode.Device, err)
		}
	}
	for _, bad := range []string{"vulkan", "gpu:", "gpu:-1", "GPU0", ""} {
		_, err := Parse([]byte("[decode]\ndevice = \""+bad+"\""), "config.toml")
		want := `config.toml:2: decode.device: must be "auto", "cpu", "gpu" or "gpu:N" (N from yaz-decode --list-devices), got "` + bad + `"`
		if err == nil || err.Error() != want {
			t.Errorf("decode.device = %q: %v, want %s", bad, err, want)
		}
	}
}
