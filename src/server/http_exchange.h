// HttpExchange: one request in flight and the way back to its client, given to a handler. A handler may answer
// at once or later from any thread (when the engine has produced the tokens): respond() with a whole body, or
// start_stream() then send() chunks and end_stream(). Every method is thread-safe and returns at once; the
// bytes are written by the server's I/O threads. Calls after the response ended or the client left do nothing.
#pragma once

#include <functional>
#include <string>

#include "server/http_message.h"

namespace pagoda::server {

class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  virtual const HttpRequest& request() const = 0;

  virtual void respond(HttpResponse response) = 0;
  // Headers of a chunked response (e.g. text/event-stream); the body follows with send().
  virtual void start_stream(int status, std::string content_type) = 0;
  virtual void send(std::string data) = 0;
  virtual void end_stream() = 0;

  // Runs `fn` on this exchange's strand: work posted here for one exchange never runs concurrently, so a
  // handler can keep per-request state without a lock.
  virtual void post(std::function<void()> fn) = 0;
  // Called once, on the strand, when the client disconnects (or its stream is cut for reading too slowly)
  // before the response ended. Set it before the response starts.
  virtual void set_on_close(std::function<void()> fn) = 0;
  // The bytes written when a stream is cut for a slow reader (an SSE error event), before the connection ends.
  virtual void set_cut_message(std::string data) = 0;
  virtual bool closed() const = 0;
};

}  // namespace pagoda::server
