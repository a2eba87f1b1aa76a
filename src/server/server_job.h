// ServerJob: what the ApiServer needs of any request in flight, whatever its endpoint (a completion, an
// embedding): the exchange whose strand its work runs on, and a way to end it early (a deadline, shutdown).
// An interface only; each job owns its own state.
#pragma once

#include <string>

#include "server/api_error.h"
#include "server/http_exchange.h"

namespace pagoda::server {

class ServerJob {
 public:
  virtual ~ServerJob() = default;
  virtual HttpExchange& exchange() = 0;
  // Ends the request early with `why`: cancels what still runs in the engine; the response (or its last event)
  // is that error. On the exchange's strand.
  virtual void expire(ApiError why) = 0;
  // Something threw inside the job: cancels what still runs, answers 500 (or ends the stream with an error
  // event), writes the log line and calls the job's on_done. On the strand.
  virtual void fail(const std::string& what) = 0;
};

}  // namespace pagoda::server
