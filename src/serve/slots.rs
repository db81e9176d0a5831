//! Who holds `serve`'s connections: at most `max` open, at most `per_client` from one address,
//! and room kept for clients that speak. A connection is idle until its first byte; when a new
//! one would pass a bound, the oldest idle connection (of that client, else of anyone) is closed
//! to make room, and the new one is refused only when every slot holds a connection that sent
//! something. So sockets that send nothing cannot lock out a scraper, however many are opened.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// The open connections, shared by the accept loop and each connection's task.
#[derive(Debug)]
pub struct Slots {
    max: usize,
    per_client: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    /// Connections open, by client.
    open: HashMap<IpAddr, usize>,
    total: usize,
    /// The idle ones (nothing received yet), oldest first, each with its way to be closed.
    idle: BTreeMap<u64, (IpAddr, oneshot::Sender<()>)>,
}

/// One admitted connection: its slot is given back when dropped.
#[derive(Debug)]
pub struct Slot {
    slots: Arc<Slots>,
    id: u64,
    client: IpAddr,
    spoke: bool,
}

/// Resolves when a connection's slot was taken for a newer one while it was idle.
pub type Evicted = oneshot::Receiver<()>;

impl Slots {
    pub fn new(max: usize, per_client: usize) -> Arc<Slots> {
        Arc::new(Slots {
            max: max.max(1),
            per_client: per_client.max(1),
            inner: Mutex::new(Inner::default()),
        })
    }

    /// A slot for a new connection from `client`, an idle one closed for it if need be; `None`
    /// when every slot it could have holds a connection that sent something.
    pub fn admit(self: &Arc<Self>, client: IpAddr) -> Option<(Slot, Evicted)> {
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if inner.open.get(&client).copied().unwrap_or(0) >= self.per_client
            && !inner.evict(|ip| ip == client)
        {
            return None;
        }
        if inner.total >= self.max && !inner.evict(|_| true) {
            return None;
        }
        let id = inner.next;
        inner.next += 1;
        *inner.open.entry(client).or_default() += 1;
        inner.total += 1;
        let (tx, rx) = oneshot::channel();
        inner.idle.insert(id, (client, tx));
        let slot = Slot {
            slots: Arc::clone(self),
            id,
            client,
            spoke: false,
        };
        Some((slot, rx))
    }

    /// Connections open now: (all, idle).
    pub fn counts(&self) -> (usize, usize) {
        let inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (inner.total, inner.idle.len())
    }
}

impl Inner {
    /// Closes the oldest idle connection whose client `which` picks, giving back its slot now
    /// (its task ends on its own); false if there is none.
    fn evict(&mut self, which: impl Fn(IpAddr) -> bool) -> bool {
        let Some(id) = self
            .idle
            .iter()
            .find(|(_, (ip, _))| which(*ip))
            .map(|(id, _)| *id)
        else {
            return false;
        };
        if let Some((ip, tx)) = self.idle.remove(&id) {
            let _ = tx.send(());
            self.release(ip);
        }
        true
    }

    fn release(&mut self, client: IpAddr) {
        self.total = self.total.saturating_sub(1);
        if let Some(n) = self.open.get_mut(&client) {
            *n -= 1;
            if *n == 0 {
                self.open.remove(&client);
            }
        }
    }
}

impl Slot {
    /// Whether the connection has sent something (and so keeps its slot).
    pub fn spoke(&self) -> bool {
        self.spoke
    }

    /// The connection sent its first byte: it keeps its slot from now on. False if the slot
    /// was taken for a newer connection just before (the connection is to close).
    pub fn speaks(&mut self) -> bool {
        let mut inner = self
            .slots
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.spoke = inner.idle.remove(&self.id).is_some();
        self.spoke
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut inner = self
            .slots
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // An evicted slot was given back when it was taken.
        if self.spoke || inner.idle.remove(&self.id).is_some() {
            inner.release(self.client);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn idle_connections_make_room_and_speaking_ones_keep_theirs() {
        let slots = Slots::new(4, 2);
        let (mut a, _ea) = slots.admit(ip(1)).unwrap();
        assert!(a.speaks());
        let (_b, mut eb) = slots.admit(ip(1)).unwrap();
        // The client's third: its idle one is closed for it.
        let (_c, _ec) = slots.admit(ip(1)).unwrap();
        assert!(eb.try_recv().is_ok(), "the idle one was told to close");
        assert_eq!(slots.counts(), (2, 1));
        let (mut d, _ed) = slots.admit(ip(2)).unwrap();
        assert!(d.speaks());
        let (_e, _ee) = slots.admit(ip(3)).unwrap();
        // Full: a newcomer takes the oldest idle slot, of anyone.
        let (_f, _ef) = slots.admit(ip(4)).unwrap();
        assert_eq!(slots.counts(), (4, 2));
        drop(_b);
        assert_eq!(slots.counts(), (4, 2), "an evicted slot is given back once");
    }

    #[test]
    fn only_speaking_connections_fill_it_up() {
        let slots = Slots::new(3, 2);
        let mut held = Vec::new();
        for last in 1..=3 {
            let (mut s, _e) = slots.admit(ip(last)).unwrap();
            assert!(s.speaks());
            held.push(s);
        }
        assert!(slots.admit(ip(9)).is_none());
        held.pop();
        assert!(slots.admit(ip(9)).is_some());
        drop(held);
        assert_eq!(slots.counts(), (0, 0));
    }

    #[test]
    fn a_flood_of_idle_ones_never_holds_more_than_its_share() {
        let slots = Slots::new(256, 64);
        let mut flood = Vec::new();
        for _ in 0..1000 {
            flood.push(slots.admit(ip(1)).unwrap());
        }
        assert_eq!(slots.counts(), (64, 64));
        let (mut scraper, _e) = slots.admit(ip(2)).unwrap();
        assert!(scraper.speaks());
        drop(flood);
        assert_eq!(slots.counts(), (1, 0));
    }
}
