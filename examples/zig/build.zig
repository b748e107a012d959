// Zig 0.11 consumer of an installed weir: linked through pkg-config, weir.h
// translated by @cImport (no hand-written bindings).
//   zig build                          builds zig-out/bin/hello
//   zig build run -- --addr HOST:PORT  serves GET / until SIGTERM
//   zig build test                     serves one request on 127.0.0.1:0
// PKG_CONFIG_PATH must find weir.pc (see tests/scripts/zig_examples.sh).
const std = @import("std");

pub fn build(b: *std.Build) void {
    const target = b.standardTargetOptions(.{});
    const optimize = b.standardOptimizeOption(.{});

    const exe = b.addExecutable(.{
        .name = "hello",
        .root_source_file = .{ .path = "src/hello.zig" },
        .target = target,
        .optimize = optimize,
    });
    linkWeir(exe);
    b.installArtifact(exe);

    const run = b.addRunArtifact(exe);
    if (b.args) |args| run.addArgs(args);
    b.step("run", "Serve GET / on --addr HOST:PORT until SIGTERM").dependOn(&run.step);

    const tests = b.addTest(.{
        .root_source_file = .{ .path = "src/hello.zig" },
        .target = target,
        .optimize = optimize,
    });
    linkWeir(tests);
    b.step("test", "Serve one request on 127.0.0.1:0").dependOn(&b.addRunArtifact(tests).step);
}

fn linkWeir(step: *std.Build.Step.Compile) void {
    step.linkLibC();
    // .force: fail loudly when pkg-config cannot find weir, rather than fall
    // back to a bare -lweir that might find some other copy.
    step.linkSystemLibrary2("weir", .{ .use_pkg_config = .force });
}
