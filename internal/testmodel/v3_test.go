package testmodel

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpecialTokens: the special token ids the generator shapes the
// decoder around are whisper.cpp's (whisper_model_load: eot and sot move up
// one in a multilingual vocabulary, the rest by the number of languages
// past 98): English-only, the 99 languages of large-v2 and before, and the
// 100 of large-v3 (and turbo), whose vocabulary has 51866 tokens.
func TestSpecialTokens(t *testing.T) {
	for _, tc := range []struct {
		nVocab int32
		want   specials
	}{
		{51864, specials{eot: 50256, sot: 50257, translate: 50357, transcribe: 50358, beg: 50363}},
		{51865, specials{eot: 50257, sot: 50258, translate: 50358, transcribe: 50359, beg: 50364}},
		{51866, specials{eot: 50257, sot: 50258, translate: 50359, transcribe: 50360, beg: 50365}},
	} {
		if got := specialTokens(Hparams{NVocab: tc.nVocab}); got != tc.want {
			t.Errorf("specialTokens(n_vocab %d) = %+v, want %+v", tc.nVocab, got, tc.want)
		}
	}
}

// TestV3LayoutInWhisperCLI: a model with large-v3's vocabulary (51866
// tokens, 100 languages) and 128 mel bins, at mini's width so it is quick,
// loads in whisper.cpp's own CLI and decodes with timestamps: whisper.cpp
// reads it as it reads large-v3-turbo, the benchmark's model, and the
// shaped decoder ends its segments there too.
func TestV3LayoutInWhisperCLI(t *testing.T) {
	cli := os.Getenv("YAZ_WHISPER_CLI")
	if cli == "" {
		t.Fatal("YAZ_WHISPER_CLI is not set: run the tests through make (make test, or eval \"$(make -s env)\")")
	}
	h, err := Mini.Hparams()
	if err != nil {
		t.Fatal(err)
	}
	h.NVocab, h.NMels = 51866, 128
	dir := t.TempDir()
	model := filepath.Join(dir, "v3.bin")
	var b bytes.Buffer
	bw := bufio.NewWriter(&b)
	if err := writeModel(bw, h, 1); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(model, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	wav := filepath.Join(dir, "a.wav")
	if err := os.WriteFile(wav, toneWAV(8), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(cli, "-m", model, "-f", wav, "-t", "2", "-ojf", "-of", filepath.Join(dir, "out"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("whisper-cli: %v\n%s", err, stderr.String())
	}
	log := stderr.String()
	for _, want := range []string{"n_mels        = 128", "n_langs       = 100", "n_vocab       = 51866"} {
		if !strings.Contains(log, want) {
			t.Errorf("whisper-cli's log lacks %q", want)
		}
	}
	if strings.Contains(log, "GGML_ASSERT") || strings.TrimSpace(stdout.String()) == "" {
		t.Errorf("whisper-cli: stdout %q, log:\n%s", stdout.String(), log)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Transcription []struct {
			Tokens []struct {
				Text string `json:"text"`
			} `json:"tokens"`
		} `json:"transcription"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Transcription) == 0 {
		t.Fatalf("whisper-cli JSON: %v, %d segments", err, len(res.Transcription))
	}
	for i, seg := range res.Transcription {
		n := len(seg.Tokens)
		// A segment opens with <|0.00|> (whisper-cli names it [_BEG_])
		// and closes with a later timestamp ([_TT_N]) within 100 tokens,
		// as on the other sizes; with the special ids of the 99-language
		// layout it opened with a word.
		if n < 3 || n > 100 || seg.Tokens[0].Text != "[_BEG_]" || !strings.HasPrefix(seg.Tokens[n-1].Text, "[_TT_") {
			t.Errorf("segment %d: %d tokens, first %q, last %q; want a short segment between timestamps", i, n, first(seg.Tokens), last(seg.Tokens))
		}
	}
}

func first[T any](s []T) any {
	if len(s) == 0 {
		return nil
	}
	return s[0]
}

func last[T any](s []T) any {
	if len(s) == 0 {
		return nil
	}
	return s[len(s)-1]
}

// toneWAV is secs seconds of syllable-like tone bursts (four a second) as
// a 16 kHz mono s16 WAV file.
func toneWAV(secs int) []byte {
	n := secs * 16000
	b := make([]byte, 44+2*n)
	copy(b, "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+2*n))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1)
	binary.LittleEndian.PutUint16(b[22:], 1)
	binary.LittleEndian.PutUint32(b[24:], 16000)
	binary.LittleEndian.PutUint32(b[28:], 32000)
	binary.LittleEndian.PutUint16(b[32:], 2)
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(2*n))
	for i := range n {
		x := float64(i) / 16000
		phase := math.Mod(x, 0.25)
		if phase > 0.18 {
			continue
		}
		f := 150 + 60*math.Sin(x/1.7)
		v := 0.2 * math.Sin(math.Pi*phase/0.18) * (math.Sin(2*math.Pi*f*x) + 0.5*math.Sin(4*math.Pi*f*x))
		binary.LittleEndian.PutUint16(b[44+2*i:], uint16(int16(v*32767)))
	}
	return b
}
