// gorilla-baseline: the fan-out benchmark's reference server (scripts/bench-fanout.sh). It speaks
// what reactor-bench uses of reactord's protocol:
//
//	GET /subscribe  WebSocket; {"type":"snapshot","version":N,"state":{...}} first, then
//	                {"type":"patch","version":N,"ops":[...]} for every change
//	POST /events    {"type":"increment","path":"/counter","by":1} -> {"version":N}
//	GET /state      the state
//
// Written as gorilla/websocket's documentation and chat example suggest: a reader goroutine and a
// writer goroutine per connection (gorilla allows one concurrent reader and one writer), the writer
// fed through a buffered channel, and each change encoded once as a websocket.PreparedMessage that
// every subscriber's writer sends. A subscriber whose channel is full is dropped (reactord's
// "close" slow-consumer policy). Builds offline against Debian's golang-github-gorilla-websocket-dev.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

const (
	sendBuffer = 1024             // messages queued per subscriber before it counts as slow
	pingPeriod = 30 * time.Second // as reactord: a quiet peer is pinged
	writeWait  = 10 * time.Second
)

type client struct {
	conn *websocket.Conn
	send chan *websocket.PreparedMessage
}

type server struct {
	mu      sync.Mutex
	version uint64
	state   map[string]int64
	keys    []string // the state's keys in insertion order, as reactord keeps them
	clients map[*client]struct{}
}

var upgrader = websocket.Upgrader{
	ReadBufferSize:  1024,
	WriteBufferSize: 1024,
	CheckOrigin:     func(*http.Request) bool { return true },
}

func (s *server) stateJSON(b *bytes.Buffer) {
	b.WriteByte('{')
	for i, k := range s.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kj, _ := json.Marshal(k)
		b.Write(kj)
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(s.state[k], 10))
	}
	b.WriteByte('}')
}

func (s *server) subscribe(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered with an error
	}
	c := &client{conn: conn, send: make(chan *websocket.PreparedMessage, sendBuffer)}

	// Registered and sent its snapshot under the lock: no change can come between them.
	s.mu.Lock()
	var b bytes.Buffer
	b.WriteString(`{"type":"snapshot","version":`)
	b.WriteString(strconv.FormatUint(s.version, 10))
	b.WriteString(`,"state":`)
	s.stateJSON(&b)
	b.WriteByte('}')
	snapshot, _ := websocket.NewPreparedMessage(websocket.TextMessage, b.Bytes())
	c.send <- snapshot
	s.clients[c] = struct{}{}
	s.mu.Unlock()

	go c.writer()
	c.reader(s)
}

func (s *server) drop(c *client) {
	s.mu.Lock()
	if _, ok := s.clients[c]; ok {
		delete(s.clients, c)
		close(c.send)
	}
	s.mu.Unlock()
}

// reader reads (and drops) what the client sends, so that pings, pongs and close frames are handled.
func (c *client) reader(s *server) {
	defer func() {
		s.drop(c)
		c.conn.Close()
	}()
	c.conn.SetReadLimit(1 << 20)
	for {
		if _, _, err := c.conn.NextReader(); err != nil {
			return
		}
	}
}

func (c *client) writer() {
	ticker := time.NewTicker(pingPeriod)
	defer func() {
		ticker.Stop()
		c.conn.Close()
	}()
	for {
		select {
		case m, ok := <-c.send:
			if !ok {
				c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4008, "too slow"), time.Now().Add(time.Second))
				return
			}
			c.conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.conn.WritePreparedMessage(m); err != nil {
				return
			}
		case <-ticker.C:
			c.conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		}
	}
}

type event struct {
	Type string `json:"type"`
	Path string `json:"path"`
	By   *int64 `json:"by"`
}

func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	d, _ := json.Marshal(detail)
	w.Write([]byte(`{"status":` + strconv.Itoa(status) + `,"detail":` + string(d) + `}`))
}

func (s *server) events(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		problem(w, http.StatusMethodNotAllowed, "POST only")
		return
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		problem(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	var e event
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&e); err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	key := strings.TrimPrefix(e.Path, "/")
	if e.Type != "increment" || e.By == nil || !strings.HasPrefix(e.Path, "/") || key == "" || strings.Contains(key, "/") {
		problem(w, http.StatusUnprocessableEntity, `only {"type":"increment","path":"/name","by":N} is served here`)
		return
	}

	s.mu.Lock()
	op := "replace"
	if _, ok := s.state[key]; !ok {
		op = "add"
		s.keys = append(s.keys, key)
	}
	s.state[key] += *e.By
	s.version++
	version := s.version
	var b bytes.Buffer
	path, _ := json.Marshal(e.Path)
	b.WriteString(`{"type":"patch","version":`)
	b.WriteString(strconv.FormatUint(version, 10))
	b.WriteString(`,"ops":[{"op":"` + op + `","path":`)
	b.Write(path)
	b.WriteString(`,"value":`)
	b.WriteString(strconv.FormatInt(s.state[key], 10))
	b.WriteString(`}]}`)
	// Encoded once; each subscriber's writer sends the same frame.
	patch, _ := websocket.NewPreparedMessage(websocket.TextMessage, b.Bytes())
	for c := range s.clients {
		select {
		case c.send <- patch:
		default: // slow: drop it, as reactord's close policy would
			delete(s.clients, c)
			close(c.send)
		}
	}
	s.mu.Unlock()

	body := []byte(`{"version":` + strconv.FormatUint(version, 10) + `}`)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

func (s *server) getState(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	var b bytes.Buffer
	s.stateJSON(&b)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(b.Bytes())
}

func main() {
	addr := flag.String("addr", "127.0.0.1:7071", "address to listen on")
	flag.Parse()
	s := &server{state: map[string]int64{}, clients: map[*client]struct{}{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/subscribe", s.subscribe)
	mux.HandleFunc("/events", s.events)
	mux.HandleFunc("/state", s.getState)
	log.Fatal((&http.Server{Addr: *addr, Handler: mux}).ListenAndServe())
}
