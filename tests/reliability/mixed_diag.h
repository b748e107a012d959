// Where a connection of the mixed load stands, for the note of an error
// (which side still holds it): the server's end as the kernel lists it, the
// client's end as TCP_INFO says.
#pragma once

#include <string>

namespace mixed {

// The server's end of the connection whose client end is fd: "SYN_RECV"
// (still hidden from accept by TCP_DEFER_ACCEPT), "ESTABLISHED (in the
// accept queue)", "ESTABLISHED (accepted)", "FIN_WAIT2" (it closed), ...
std::string server_side(int fd);
// The client's end: "CLOSE_WAIT (...)" when the server's FIN came.
std::string client_side(int fd);

} // namespace mixed
