//! hello --addr HOST:PORT: answers GET / with "Hello, World!", prints
//! "listening on HOST:PORT" once bound, exits 0 on SIGTERM or SIGINT.
const std = @import("std");

pub const c = @cImport({
    @cInclude("signal.h");
    @cInclude("weir.h");
});

fn view(s: c.weir_str_t) []const u8 {
    if (s.len == 0) return "";
    return s.ptr[0..s.len];
}

fn str(s: []const u8) c.weir_str_t {
    return .{ .ptr = s.ptr, .len = s.len };
}

fn answer(ex: ?*c.weir_exchange, status: c_int, body: []const u8) void {
    const headers = [_]c.weir_header_t{.{ .name = str("Content-Type"), .value = str("text/plain") }};
    _ = c.weir_respond(ex, status, &headers, headers.len, body.ptr, body.len, 0);
}

/// Runs on weir's loop threads; answers before it returns (inline mode).
/// Zig has no unwinding, so nothing can escape into C.
fn onRequest(user: ?*anyopaque, ex: ?*c.weir_exchange) callconv(.C) void {
    _ = user;
    const req = c.weir_exchange_request(ex);
    if (req == null) return;
    if (std.mem.eql(u8, view(req.*.method), "GET") and std.mem.eql(u8, view(req.*.path), "/")) {
        answer(ex, 200, "Hello, World!");
    } else {
        answer(ex, 404, "Not Found\n");
    }
}

pub const Error = error{Weir};

fn check(rc: c_int, what: []const u8) Error!void {
    if (rc >= 0) return;
    std.debug.print("hello: {s}: {s} ({s})\n", .{ what, c.weir_strerror(rc), c.weir_err_name(rc) });
    return error.Weir;
}

/// Creates, binds and starts an inline-mode engine; host must be numeric.
pub fn serve(host: [:0]const u8, port: u16, workers: u32) Error!*c.weir_engine {
    var cfg: c.weir_config = undefined;
    c.weir_config_init(&cfg);
    cfg.host = host.ptr;
    cfg.port = port;
    cfg.workers = workers;
    cfg.on_request = onRequest;
    var engine: ?*c.weir_engine = null;
    try check(c.weir_engine_create(&cfg, &engine), "create");
    errdefer c.weir_engine_destroy(engine);
    try check(c.weir_engine_listen(engine), "listen");
    try check(c.weir_engine_start(engine), "start");
    return engine.?;
}

pub fn boundAddress(engine: *c.weir_engine) Error!std.net.Address {
    var ss: c.struct_sockaddr_storage = undefined;
    var len: c.socklen_t = @sizeOf(c.struct_sockaddr_storage);
    try check(c.weir_engine_addr(engine, &ss, &len), "addr");
    return std.net.Address.initPosix(@ptrCast(@alignCast(&ss)));
}

pub fn main() !u8 {
    var gpa = std.heap.GeneralPurposeAllocator(.{}){};
    defer _ = gpa.deinit();
    const alloc = gpa.allocator();
    const args = try std.process.argsAlloc(alloc);
    defer std.process.argsFree(alloc, args);

    var addr_arg: []const u8 = "127.0.0.1:8080";
    var i: usize = 1;
    while (i < args.len) : (i += 1) {
        if (std.mem.eql(u8, args[i], "--addr") and i + 1 < args.len) {
            i += 1;
            addr_arg = args[i];
        } else {
            std.debug.print("usage: hello [--addr HOST:PORT]\n", .{});
            return 2;
        }
    }
    const colon = std.mem.lastIndexOfScalar(u8, addr_arg, ':') orelse {
        std.debug.print("hello: --addr wants HOST:PORT, got {s}\n", .{addr_arg});
        return 2;
    };
    const host = std.mem.trim(u8, addr_arg[0..colon], "[]");
    const port = std.fmt.parseInt(u16, addr_arg[colon + 1 ..], 10) catch {
        std.debug.print("hello: bad port in {s}\n", .{addr_arg});
        return 2;
    };
    const host_z = try alloc.dupeZ(u8, host);
    defer alloc.free(host_z);

    // weir installs no signal handlers. Block SIGTERM/SIGINT before weir
    // spawns its loop threads (they inherit the mask) and sigwait for them.
    var stop: c.sigset_t = undefined;
    _ = c.sigemptyset(&stop);
    _ = c.sigaddset(&stop, c.SIGINT);
    _ = c.sigaddset(&stop, c.SIGTERM);
    _ = c.pthread_sigmask(c.SIG_BLOCK, &stop, null);

    const engine = serve(host_z, port, 0) catch return 1;
    defer c.weir_engine_destroy(engine);
    const bound = boundAddress(engine) catch return 1;
    try std.io.getStdOut().writer().print("listening on {}\n", .{bound});

    var sig: c_int = 0;
    _ = c.sigwait(&stop, &sig);
    check(c.weir_engine_shutdown(engine, 5 * std.time.ns_per_s), "shutdown") catch {};
    return 0;
}

test "serves GET / on 127.0.0.1:0 and shuts down" {
    const engine = try serve("127.0.0.1", 0, 1);
    defer c.weir_engine_destroy(engine);
    const addr = try boundAddress(engine);
    try std.testing.expect(addr.getPort() != 0);

    const conn = try std.net.tcpConnectToAddress(addr);
    defer conn.close();
    try conn.writeAll("GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    var buf: [4096]u8 = undefined;
    var n: usize = 0;
    while (n < buf.len) {
        const got = try conn.read(buf[n..]);
        if (got == 0) break;
        n += got;
    }
    const out = buf[0..n];
    try std.testing.expect(std.mem.startsWith(u8, out, "HTTP/1.1 200"));
    try std.testing.expect(std.mem.endsWith(u8, out, "\r\n\r\nHello, World!"));
    try check(c.weir_engine_shutdown(engine, std.time.ns_per_s), "shutdown");
}

test "header version matches the library" {
    try std.testing.expectEqual(@as(u32, c.WEIR_VERSION_HEX), c.weir_version());
    try std.testing.expectEqualStrings("WEIR_E_STATE", std.mem.span(c.weir_err_name(c.WEIR_E_STATE)));
}
