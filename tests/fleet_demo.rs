//! The fleet overview from real `gpumon serve` hosts replaying the demo (to its end, so what they
//! serve is fixed): two hosts' `/snapshot`s read over HTTP on loopback become the overview's rows,
//! drawn at 80x24, 120x40 and 200x50: a bar per GPU, the worst alert first.

#[path = "common/serve.rs"]
mod serve;

use gpumon::input::Action;
use gpumon::model::Config;
use gpumon::screen::{Msg, State};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serve::Server;

fn demo_host() -> gpumon::model::Machine {
    let server = Server::start(&["--replay", "assets/demo.ndjson", "--speed", "1000"]);
    server.wait_until("ok: the recording ended");
    let reply = server.get("/snapshot", &[]);
    assert_eq!(reply.status, 200);
    let snap =
        gpumon::snapshot::parse(std::path::Path::new("/snapshot"), reply.body.as_bytes()).unwrap();
    snap.to_machine(&Config::new(1000, 600_000))
}

fn draw(state: &State, w: u16, h: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal.draw(|f| gpumon::view::render(f, state)).unwrap();
    format!("{}", terminal.backend())
}

#[test]
fn two_demo_servers_in_the_overview() {
    let host = demo_host();
    let mut quiet = host.clone();
    quiet.alerts.clear();
    quiet.add_alerts(Vec::new());
    let mut state = State::with_hosts(
        Config::new(1000, 600_000),
        vec![("gpu-a:9477".into(), quiet), ("gpu-b:9477".into(), host)],
    );
    for (w, h) in [(80, 24), (120, 40), (200, 50)] {
        let text = draw(&state, w, h);
        let first = text.lines().position(|l| l.contains("gpu-b:9477")).unwrap();
        let second = text.lines().position(|l| l.contains("gpu-a:9477")).unwrap();
        assert!(first < second, "the host with alerts first:\n{text}");
        insta::assert_snapshot!(format!("fleet_demo_{w}x{h}"), text);
    }
    state.update(Msg::Action(Action::FocusGpu(1)));
    let header = draw(&state, 120, 40).lines().next().unwrap().to_string();
    // Its address names it; the machine's own name (vm) differs, so it is said too.
    assert!(header.contains("host 2/2 gpu-b:9477 ─ host vm"), "{header}");
}
