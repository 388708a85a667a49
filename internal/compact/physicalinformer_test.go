/*
Copyright The Kubeocean Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package compact

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// What the disguise of PhysicalPods does with each method of client-go's
// informer and indexer: a method that hands out cached objects, or takes
// what will be handed them (a handler, an index function), is wrapped so
// that readers see Pods; any other is delegated as it is, for the reason
// given. A method a newer client-go adds is in neither list, so the test
// below fails until someone decides: delegated unawares, it could hand out
// records to a reader that expects Pods.
var (
	wrappedInformerMethods = []string{
		"AddEventHandler", "AddEventHandlerWithOptions", "AddEventHandlerWithResyncPeriod",
		"AddIndexers", "GetIndexer", "GetStore",
	}
	delegatedInformerMethods = map[string]string{
		"GetController":                   "a Controller runs and reports sync, it hands out no objects",
		"HasSynced":                       "reports sync",
		"HasSyncedChecker":                "reports sync",
		"IsStopped":                       "reports the informer's state",
		"LastSyncResourceVersion":         "a version string",
		"RemoveEventHandler":              "takes the registration AddEventHandler returned",
		"Run":                             "starts the informer",
		"RunWithContext":                  "starts the informer",
		"SetTransform":                    "the informers package sets the record transform; nothing else may",
		"SetWatchErrorHandler":            "handles errors, not objects",
		"SetWatchErrorHandlerWithContext": "handles errors, not objects",
	}
	wrappedIndexerMethods = []string{"AddIndexers", "ByIndex", "Get", "GetByKey", "Index", "List"}
	// Writes are delegated: only the informer writes its cache.
	delegatedIndexerMethods = map[string]string{
		"Add": "a write", "Update": "a write", "Delete": "a write", "Replace": "a write",
		"Resync": "a write", "Bookmark": "a write of a version",
		"GetIndexers":                  "index functions that take records (indexesOfPods)",
		"IndexKeys":                    "keys",
		"ListIndexFuncValues":          "index values",
		"ListKeys":                     "keys",
		"LastStoreSyncResourceVersion": "a version string",
	}
	// The options of a handler's registration, passed on as they are: a
	// field that carries a function of objects (a filter, say) would see
	// records.
	knownHandlerOptions = []string{"Logger", "ResyncPeriod"}
)

func TestPhysicalPodsWrapsEveryMethodThatHandsOutObjects(t *testing.T) {
	declared := declaredMethods(t, "physicalinformer.go")
	for _, tt := range []struct {
		iface     reflect.Type
		wrapper   string
		wrapped   []string
		delegated map[string]string
	}{
		{reflect.TypeFor[cache.SharedIndexInformer](), "podsOfRecords", wrappedInformerMethods, delegatedInformerMethods},
		{reflect.TypeFor[cache.Indexer](), "podIndexer", wrappedIndexerMethods, delegatedIndexerMethods},
	} {
		var methods []string
		for i := range tt.iface.NumMethod() {
			name := tt.iface.Method(i).Name
			methods = append(methods, name)
			_, delegated := tt.delegated[name]
			if wrapped := slices.Contains(tt.wrapped, name); wrapped == delegated {
				t.Errorf("%s.%s is neither wrapped nor knowingly delegated by %s (or both): decide what it does with records", tt.iface, name, tt.wrapper)
			}
		}
		for name := range tt.delegated {
			if !slices.Contains(methods, name) {
				t.Errorf("%s has no method %s any more: drop it from the list", tt.iface, name)
			}
		}
		// The list of wrapped methods is what the wrapper declares, not
		// what it inherits from the informer it embeds.
		if got, want := declared[tt.wrapper], slices.Sorted(slices.Values(tt.wrapped)); !slices.Equal(got, want) {
			t.Errorf("%s declares %v, the list says it wraps %v", tt.wrapper, got, want)
		}
	}
	var fields []string
	for field := range reflect.TypeFor[cache.HandlerOptions]().Fields() {
		fields = append(fields, field.Name)
	}
	if !slices.Equal(fields, knownHandlerOptions) {
		t.Errorf("cache.HandlerOptions has the fields %v, podsOfRecords knows %v: check that none sees objects", fields, knownHandlerOptions)
	}
}

// declaredMethods lists, by receiver type, the methods declared in file.
func declaredMethods(t *testing.T, file string) map[string][]string {
	t.Helper()
	parsed, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string][]string{}
	for _, decl := range parsed.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv == nil {
			continue
		}
		if receiver, ok := fn.Recv.List[0].Type.(*ast.Ident); ok {
			methods[receiver.Name] = append(methods[receiver.Name], fn.Name.Name)
		}
	}
	for receiver := range methods {
		slices.Sort(methods[receiver])
	}
	return methods
}

// Each wrapped method hands out Pods, not records: the reads of the
// indexer, and the handlers of each way of registering one.
func TestPhysicalPodsWrappedMethodsHandOutPods(t *testing.T) {
	record, _ := testTransforms.Physical(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "mount", Name: "web-x"}})
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := indexer.Add(record); err != nil {
		t.Fatal(err)
	}
	informer := &handlerRecorder{SharedIndexInformer: cache.NewSharedIndexInformer(nil, &corev1.Pod{}, 0, nil), indexer: indexer}
	pods := PhysicalPods(informer).Informer()
	if err := pods.AddIndexers(cache.Indexers{"name": func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Name}, nil // panics on a record
	}}); err != nil {
		t.Fatal(err)
	}
	isPod := func(what string, objs ...any) {
		t.Helper()
		for _, obj := range objs {
			if _, ok := obj.(*corev1.Pod); !ok {
				t.Errorf("%s: a %T", what, obj)
			}
		}
	}
	got, _, _ := pods.GetIndexer().Get(record)
	isPod("Get", got)
	got, _, _ = pods.GetStore().GetByKey("mount/web-x")
	isPod("GetByKey", got)
	isPod("List", pods.GetStore().List()...)
	listed, _ := pods.GetIndexer().Index(cache.NamespaceIndex, record)
	isPod("Index", listed...)
	listed, _ = pods.GetIndexer().ByIndex("name", "web-x")
	isPod("ByIndex of an added index", listed...)

	var handed []any
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { handed = append(handed, obj) },
		UpdateFunc: func(oldObj, newObj any) { handed = append(handed, oldObj, newObj) },
		DeleteFunc: func(obj any) { handed = append(handed, obj) },
	}
	for what, register := range map[string]func() (cache.ResourceEventHandlerRegistration, error){
		"AddEventHandler": func() (cache.ResourceEventHandlerRegistration, error) { return pods.AddEventHandler(handler) },
		"AddEventHandlerWithResyncPeriod": func() (cache.ResourceEventHandlerRegistration, error) {
			return pods.AddEventHandlerWithResyncPeriod(handler, time.Hour)
		},
		"AddEventHandlerWithOptions": func() (cache.ResourceEventHandlerRegistration, error) {
			return pods.AddEventHandlerWithOptions(handler, cache.HandlerOptions{})
		},
	} {
		handed = nil
		if _, err := register(); err != nil {
			t.Fatal(err)
		}
		informer.handler.OnAdd(record, false)
		informer.handler.OnUpdate(record, record)
		informer.handler.OnDelete(cache.DeletedFinalStateUnknown{Key: "mount/web-x", Obj: record})
		if len(handed) != 4 {
			t.Fatalf("%s: handed %d objects, want 4", what, len(handed))
		}
		handed[3] = handed[3].(cache.DeletedFinalStateUnknown).Obj
		isPod(what, handed...)
	}
}

// handlerRecorder is an informer of indexer that keeps the handler last
// registered, for the test to call.
type handlerRecorder struct {
	cache.SharedIndexInformer
	indexer cache.Indexer
	handler cache.ResourceEventHandler
}

func (i *handlerRecorder) GetIndexer() cache.Indexer { return i.indexer }
func (i *handlerRecorder) GetStore() cache.Store     { return i.indexer }
func (i *handlerRecorder) AddIndexers(indexers cache.Indexers) error {
	return i.indexer.AddIndexers(indexers)
}
func (i *handlerRecorder) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	i.handler = handler
	return nil, nil
}
func (i *handlerRecorder) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, _ time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandler(handler)
}
func (i *handlerRecorder) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, _ cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandler(handler)
}
