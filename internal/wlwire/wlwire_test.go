package wlwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// pair is the two ends of a connection.
func pair(t *testing.T) (a, b *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	end := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "wl")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return end(fds[0]), end(fds[1])
}

// TestMsg: the header, the words and a string's length, NUL and padding,
// as libwayland writes them.
func TestMsg(t *testing.T) {
	got := NewMsg(3, 0).Uint(1).Str("wl_seat").Uint(7).Bytes()
	want := []byte{
		3, 0, 0, 0, 0, 0, 28, 0, // object 3, opcode 0, 28 bytes
		1, 0, 0, 0,
		8, 0, 0, 0, 'w', 'l', '_', 's', 'e', 'a', 't', 0,
		7, 0, 0, 0,
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Bytes = %v, want %v", got, want)
	}
	if got := NewMsg(9, 2).Str("abcd").Bytes(); len(got) != 8+4+8 || got[6] != 20 || got[4] != 2 {
		t.Errorf("a string of 4 bytes (5 with the NUL) = %v, want padded to 8", got)
	}
}

// TestReaderRoundTrip: messages written in pieces, several in one write
// and one cut in two, come out whole and in order, with their arguments.
func TestReaderRoundTrip(t *testing.T) {
	w, rc := pair(t)
	r := NewReader(rc)
	defer r.Close()
	var all []byte
	all = append(all, NewMsg(DisplayID, DisplayError).Uint(4).Uint(2).Str("invalid keymap").Bytes()...)
	all = append(all, NewMsg(2, RegistryGlobal).Uint(1).Str(SeatInterface).Uint(7).Bytes()...)
	all = append(all, NewMsg(5, CallbackDone).Uint(0).Bytes()...)
	cut := len(all) - 6
	if _, err := w.Write(all[:cut]); err != nil {
		t.Fatal(err)
	}
	obj, op, a, err := r.Next()
	if err != nil || obj != DisplayID || op != DisplayError {
		t.Fatalf("Next = %d, %d, %v; want the display's error", obj, op, err)
	}
	if id, code, msg := a.Uint(), a.Uint(), a.Str(); id != 4 || code != 2 || msg != "invalid keymap" || a.Bad() {
		t.Errorf("error args = %d, %d, %q (bad %v)", id, code, msg, a.Bad())
	}
	obj, op, a, err = r.Next()
	if err != nil || obj != 2 || op != RegistryGlobal {
		t.Fatalf("Next = %d, %d, %v; want the registry's global", obj, op, err)
	}
	if name, iface, version := a.Uint(), a.Str(), a.Uint(); name != 1 || iface != SeatInterface || version != 7 || a.Bad() {
		t.Errorf("global args = %d, %q, %d (bad %v)", name, iface, version, a.Bad())
	}
	if _, err := w.Write(all[cut:]); err != nil {
		t.Fatal(err)
	}
	obj, op, a, err = r.Next()
	if err != nil || obj != 5 || op != CallbackDone || a.Uint() != 0 {
		t.Fatalf("Next = %d, %d, %v; want the callback's done", obj, op, err)
	}
	// The end comes after every whole message before it.
	if _, err := w.Write(NewMsg(7, 1).Bytes()); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if obj, op, _, err := r.Next(); err != nil || obj != 7 || op != 1 {
		t.Fatalf("Next = %d, %d, %v; want the last message before the end", obj, op, err)
	}
	if _, _, _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("Next at the end = %v, want EOF", err)
	}
}

// TestArgsBad: arguments the message is too short for read as zero and
// make it bad, a string past the end too.
func TestArgsBad(t *testing.T) {
	a := &Args{b: NewMsg(1, 0).Uint(9).Bytes()[8:]}
	if a.Uint() != 9 || a.Bad() {
		t.Fatal("the one word did not read")
	}
	if a.Uint() != 0 || !a.Bad() {
		t.Error("a word past the end read, or did not make the args bad")
	}
	long := NewMsg(1, 0).Str("wl_seat").Bytes()[8:]
	a = &Args{b: long[:len(long)-4]}
	if s := a.Str(); s != "" || !a.Bad() {
		t.Errorf("a cut string read %q (bad %v)", s, a.Bad())
	}
}

// TestReaderMalformed: a size no message has ends the messages.
func TestReaderMalformed(t *testing.T) {
	for _, size := range []uint32{0, 4, 10} {
		w, rc := pair(t)
		r := NewReader(rc)
		b := binary.LittleEndian.AppendUint32(nil, 1)
		b = binary.LittleEndian.AppendUint32(b, size<<16)
		b = append(b, make([]byte, 8)...)
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := r.Next(); !errors.Is(err, ErrMalformed) {
			t.Errorf("size %d: Next = %v, want ErrMalformed", size, err)
		}
		if _, _, _, err := r.Next(); !errors.Is(err, ErrMalformed) {
			t.Errorf("size %d: Next after = %v, want ErrMalformed again", size, err)
		}
	}
}

// TestKeymapOverTheWire: a keymap sent with Send comes out of the
// reader's TakeFd sealed, with its NUL, at the size the message says; a
// second take finds none, and Close closes what no message took.
func TestKeymapOverTheWire(t *testing.T) {
	const keymap = "xkb_keymap {\n};\n"
	w, rc := pair(t)
	r := NewReader(rc)
	fd, size, err := KeymapFile(keymap)
	if err != nil {
		t.Fatal(err)
	}
	err = Send(w, NewMsg(3, KeyboardKeymap).Uint(KeymapFormatXKBV1).Uint(size).Bytes(), fd)
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	_, op, a, err := r.Next()
	if err != nil || op != KeyboardKeymap {
		t.Fatalf("Next = %d, %v", op, err)
	}
	format, got, gotSize := a.Uint(), r.TakeFd(), a.Uint()
	if format != KeymapFormatXKBV1 || got < 0 || gotSize != uint32(len(keymap)+1) {
		t.Fatalf("keymap %d, fd %d, size %d; want xkb_v1, an fd, %d", format, got, gotSize, len(keymap)+1)
	}
	defer unix.Close(got)
	if r.TakeFd() != -1 {
		t.Error("a second fd to take")
	}
	buf := make([]byte, gotSize)
	if n, err := unix.Pread(got, buf, 0); err != nil || n != len(buf) || string(buf) != keymap+"\x00" {
		t.Errorf("the fd holds %q (%d, %v), want the keymap and its NUL", buf[:max(n, 0)], n, err)
	}
	seals, err := unix.FcntlInt(uintptr(got), unix.F_GET_SEALS, 0)
	if want := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL; err != nil || seals&want != want {
		t.Errorf("seals = %#x, %v; want %#x", seals, err, want)
	}
	// One more that no message takes: Close closes it.
	fd2, _, err := KeymapFile(keymap)
	if err != nil {
		t.Fatal(err)
	}
	err = Send(w, NewMsg(3, 9).Bytes(), fd2)
	unix.Close(fd2)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if len(r.fds) != 1 {
		t.Fatalf("%d fds kept, want 1", len(r.fds))
	}
	kept := r.fds[0]
	r.Close()
	if _, err := unix.FcntlInt(uintptr(kept), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
		t.Errorf("the fd no message took is open after Close: %v", err)
	}
}
