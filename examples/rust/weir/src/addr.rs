//! Socket addresses as weir fills them (a `sockaddr_storage` and its length,
//! from weir_engine_addr and weir_exchange_peer) turned into std's.
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use crate::{check, sys, Error, Result};

const EAFNOSUPPORT: i32 = -97;

/// Calls `fill` with room for any address and converts what it wrote.
pub(crate) fn socket_addr(
    fill: impl FnOnce(*mut sys::sockaddr_storage, *mut sys::socklen_t) -> std::ffi::c_int,
) -> Result<SocketAddr> {
    let mut ss: sys::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<sys::sockaddr_storage>() as sys::socklen_t;
    check(fill(&mut ss, &mut len))?;
    let len = (len as usize).min(std::mem::size_of::<sys::sockaddr_storage>());
    // The kernel's layouts (sockaddr_in, sockaddr_in6): family, then the port
    // and the address in network byte order; flowinfo and scope_id for IPv6.
    let b = unsafe { std::slice::from_raw_parts(&ss as *const _ as *const u8, len) };
    let port = |b: &[u8]| u16::from_be_bytes([b[2], b[3]]);
    match ss.ss_family {
        sys::AF_INET if b.len() >= 8 => {
            Ok(SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(b[4], b[5], b[6], b[7]), port(b))))
        }
        sys::AF_INET6 if b.len() >= 28 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(&b[8..24]);
            let flowinfo = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
            let scope_id = u32::from_ne_bytes([b[24], b[25], b[26], b[27]]);
            Ok(SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(a), port(b), flowinfo, scope_id)))
        }
        _ => Err(Error(EAFNOSUPPORT)),
    }
}
