//! The backend names are the library's one list: each one a builder takes,
//! every other name refused with -EINVAL rather than run as epoll.
use weir::Engine;

#[test]
fn backends_are_the_librarys_list() {
    let names = weir::backends();
    assert_eq!(names.first(), Some(&"epoll"), "{names:?}");
    assert!(names.contains(&"uring"), "{names:?}");
    for n in &names {
        assert!(Engine::builder().backend(n).is_ok(), "{n} refused");
    }
    for bad in ["", "no-such-backend", "EPOLL", "io_uring", "ep\0oll"] {
        let code = Engine::builder().backend(bad).err().map(|e| e.code());
        assert_eq!(code, Some(-22), "backend({bad:?})");
    }
}
