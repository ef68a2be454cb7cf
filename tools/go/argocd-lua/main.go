// Command argocd-lua runs an Argo CD resource health script in gopher-lua, the Lua VM Argo CD
// embeds, with the libraries Argo CD opens for a script from argocd-cm (util/lua/lua.go,
// VM.runLua: package, base and table; its own os with time and date; no string, math, io):
//
//	argocd-lua SCRIPT.lua < objects.json
//
// reads a JSON array of Kubernetes objects and prints a JSON array with, per object, the table the
// script returned ({"status": ..., "message": ...}) or {"error": ...}. Each object gets a fresh
// state, a 1 s deadline and the global obj, converted as Argo CD converts an unstructured object
// (arrays become 1-indexed tables, null is nil). Test tooling only: tests/deploy/.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	lua "github.com/yuin/gopher-lua"
)

func toLua(L *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		t := L.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(toLua(L, item))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(v))
		for key, item := range v {
			t.RawSetH(lua.LString(key), toLua(L, item))
		}
		return t
	}
	return lua.LNil
}

func osTime(L *lua.LState) int {
	L.Push(lua.LNumber(time.Now().Unix()))
	return 1
}

func run(script string, obj any) (out map[string]any) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := L.CallByParam(lua.P{Fn: L.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return map[string]any{"error": err.Error()}
		}
	}
	L.SetGlobal("os", L.SetFuncs(L.NewTable(), map[string]lua.LGFunction{"time": osTime}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	L.SetContext(ctx)
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString(script); err != nil {
		return map[string]any{"error": err.Error()}
	}
	table, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return map[string]any{"error": "the script returned " + L.Get(-1).Type().String() + ", not a table"}
	}
	out = map[string]any{}
	table.ForEach(func(key, value lua.LValue) { out[key.String()] = value.String() })
	return out
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: argocd-lua SCRIPT.lua < objects.json")
		os.Exit(2)
	}
	script, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var objects []any
	if err := json.NewDecoder(os.Stdin).Decode(&objects); err != nil {
		fmt.Fprintln(os.Stderr, "stdin is not a JSON array:", err)
		os.Exit(2)
	}
	results := make([]map[string]any, 0, len(objects))
	for _, obj := range objects {
		results = append(results, run(string(script), obj))
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
