//! The playground's services: a meal shop and a calendar, with
//! deterministic seed data and in-memory state.

pub mod calendar;
pub mod shop;

use parley_core::money::Money;
use parley_core::quantity::{Quantity, Uses};

/// US dollars in cents.
pub fn usd(cents: i64) -> Money {
    Money {
        amount: cents,
        currency: "USD".into(),
    }
}

/// US dollars in cents as a YEA `spend` quantity (conventions: ISO 4217
/// unit, scale 2, amount in minor units).
pub fn usd_quantity(cents: i64) -> Quantity {
    Quantity {
        amount: cents.max(0) as u64,
        scale: 2,
        unit: Some("USD".into()),
    }
}

/// A `uses` map from (measure, quantity) pairs.
pub fn uses<const N: usize>(entries: [(&str, Quantity); N]) -> Uses {
    Uses(
        entries
            .into_iter()
            .map(|(n, q)| (n.to_string(), q))
            .collect(),
    )
}

use crate::clock::Clock;
use crate::service::server::{self, Running};
use crate::service::Service;
use parley_core::{Dialect, PublicKey};
use std::sync::Arc;

/// Both services, running.
#[derive(Debug)]
pub struct Playground {
    /// The shop's server.
    pub shop: Running,
    /// The calendar's server.
    pub cal: Running,
    /// The shop (state and spend totals, for tests).
    pub shop_service: Arc<Service<shop::Shop>>,
    /// The calendar.
    pub cal_service: Arc<Service<calendar::Calendar>>,
}

impl Playground {
    /// Starts the shop on `shop_addr` and the calendar on `cal_addr` (port 0:
    /// any free port), both trusting grants rooted in `trusted`.
    pub async fn start(
        shop_addr: &str,
        cal_addr: &str,
        trusted: Vec<PublicKey>,
        clock: Arc<dyn Clock>,
    ) -> std::io::Result<Playground> {
        Playground::start_in(shop_addr, cal_addr, trusted, clock, Dialect::ParleyV1).await
    }

    /// [`Playground::start`] with both services speaking `dialect`.
    pub async fn start_in(
        shop_addr: &str,
        cal_addr: &str,
        trusted: Vec<PublicKey>,
        clock: Arc<dyn Clock>,
        dialect: Dialect,
    ) -> std::io::Result<Playground> {
        Playground::start_revocable(shop_addr, cal_addr, trusted, clock, dialect, None).await
    }

    /// [`Playground::start_in`], both services honouring the revocation
    /// statements in `revocations` (an extension) when given.
    pub async fn start_revocable(
        shop_addr: &str,
        cal_addr: &str,
        trusted: Vec<PublicKey>,
        clock: Arc<dyn Clock>,
        dialect: Dialect,
        revocations: Option<std::path::PathBuf>,
    ) -> std::io::Result<Playground> {
        let mut shop_service =
            Service::new_in(shop::Shop::new(), trusted.clone(), clock.clone(), dialect);
        let mut cal_service = Service::new_in(
            calendar::Calendar::new(clock.now()),
            trusted,
            clock,
            dialect,
        );
        if let Some(dir) = revocations {
            shop_service = shop_service.with_revocations(dir.clone());
            cal_service = cal_service.with_revocations(dir);
        }
        let shop_service = Arc::new(shop_service);
        let cal_service = Arc::new(cal_service);
        let shop = server::spawn(shop_addr, shop_service.clone()).await?;
        let cal = server::spawn(cal_addr, cal_service.clone()).await?;
        Ok(Playground {
            shop,
            cal,
            shop_service,
            cal_service,
        })
    }

    /// Stops both servers.
    pub async fn stop(self) {
        self.shop.stop().await;
        self.cal.stop().await;
    }
}
