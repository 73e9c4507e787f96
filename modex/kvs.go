package modex

// KV is one key and its value, as a rank put it.
type KV struct {
	Key   string
	Value string
}

// View is the job's key-value space as of one fence. It is immutable: a
// fence makes a new View with one more layer, so the PMI servers of the
// ranks can answer gets from it on their own goroutines, and no get ever
// crosses the daemon's event loop, let alone the network.
type View struct {
	layers []map[string]string // oldest first
}

// With returns the view after a fence that committed kvs. When a key was
// put twice the later put wins, as in a PMI key-value space.
func (v View) With(kvs []KV) View {
	if len(kvs) == 0 {
		return v
	}
	layer := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		layer[kv.Key] = kv.Value
	}
	layers := make([]map[string]string, len(v.layers), len(v.layers)+1)
	copy(layers, v.layers)
	return View{layers: append(layers, layer)}
}

// Get looks key up, newest fence first.
func (v View) Get(key string) (string, bool) {
	for i := len(v.layers) - 1; i >= 0; i-- {
		if val, ok := v.layers[i][key]; ok {
			return val, true
		}
	}
	return "", false
}

// Len is the number of distinct keys.
func (v View) Len() int {
	seen := map[string]bool{}
	for _, l := range v.layers {
		for k := range l {
			seen[k] = true
		}
	}
	return len(seen)
}
