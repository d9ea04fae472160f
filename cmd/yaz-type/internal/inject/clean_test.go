package inject

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/yazses/yazses/lib/untrusted"
)

// recording is a backend, and a Pauser, that records the text each call
// is handed; fail is what its Type returns.
type recording struct {
	name          string
	fail          error
	pauses, typed []string
}

func (r *recording) Name() string                         { return r.name }
func (r *recording) Focus(context.Context) (Focus, error) { return FocusWindow, nil }
func (r *recording) Pauses(_ context.Context, text untrusted.TypedText) bool {
	r.pauses = append(r.pauses, text.Text())
	return false
}
func (r *recording) Type(_ context.Context, text untrusted.TypedText) error {
	r.typed = append(r.typed, text.Text())
	return r.fail
}

// TestTypedTextIsCleanedText: the Typer cleans a text where it enters
// typing, and what every backend is handed (asked whether it pauses,
// failed, typed by the next) is the text cleaned by the typing rule:
// line breaks, tabs and NEL are spaces, ESC and NUL are gone, the
// bidirectional controls and the Hebrew stay, spacing is kept. That a
// backend cannot be handed anything else is the compiler's: Type and
// Pauses take an untrusted.TypedText, which only untrusted.Typed makes.
func TestTypedTextIsCleanedText(t *testing.T) {
	const (
		in   = "one\r\ntwo\tthree\x1b[1m \u202eevil\u202c\x00 \u0085four \u200fמילה"
		want = "one two three[1m \u202eevil\u202c  four \u200fמילה"
	)
	first := &recording{name: X11, fail: ErrUnavailable}
	next := &recording{name: Xdotool}
	ty := &Typer{list: []Injector{first, next}, paste: &recording{name: Clipboard}, pasteOver: 1000,
		log: Options{}.WithDefaults().Log}
	used, err := ty.Type(context.Background(), in)
	if err != nil || used != Xdotool {
		t.Fatalf("Type = %q, %v; want %q, nil", used, err, Xdotool)
	}
	for _, got := range [][]string{first.pauses, first.typed, next.typed} {
		if len(got) != 1 || got[0] != want {
			t.Errorf("a backend was handed %+q, want [%+q]", got, want)
		}
	}
}

// TestCleanedOnce: untrusted.Typed, the one maker of a TypedText, is
// called in the two places where a text enters yaz-type's routes:
// Typer.Type (a text to type) and Typer.Preedit (a tentative text to
// show), once each.
// The rule is idempotent, so a second cleaning could not be seen in what
// is typed; this test sees it in the source.
func TestCleanedOnce(t *testing.T) {
	var uses []string
	err := filepath.WalkDir(filepath.Join("..", ".."), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		in, err := typedUses(p)
		uses = append(uses, in...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(uses)
	if want := []string{"(*Typer).Preedit", "(*Typer).Type"}; !slices.Equal(uses, want) {
		t.Errorf("untrusted.Typed is used in %v, want once each in %v", uses, want)
	}
}

// typedUses names the function of each use of untrusted.Typed in a Go
// file.
func typedUses(path string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	pkg := importName(f, "github.com/yazses/yazses/lib/untrusted")
	if pkg == "" {
		return nil, nil
	}
	var uses []string
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Typed" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == pkg {
					uses = append(uses, funcName(fn))
				}
			}
			return true
		})
	}
	return uses, nil
}

// importName is the name f gives the package of path ("" when f does not
// import it).
func importName(f *ast.File, path string) string {
	for _, im := range f.Imports {
		if v, _ := strconv.Unquote(im.Path.Value); v != path {
			continue
		}
		if im.Name != nil {
			return im.Name.Name
		}
		return filepath.Base(path)
	}
	return ""
}

// funcName is fn's name as "(*T).M" or "F".
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	recv := fn.Recv.List[0].Type
	star := ""
	if s, ok := recv.(*ast.StarExpr); ok {
		recv, star = s.X, "*"
	}
	if id, ok := recv.(*ast.Ident); ok {
		return "(" + star + id.Name + ")." + fn.Name.Name
	}
	return fn.Name.Name
}
