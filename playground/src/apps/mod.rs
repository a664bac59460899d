//! The playground's services: a meal shop and a calendar, with
//! deterministic seed data and in-memory state.

pub mod calendar;
pub mod shop;

use parley_core::money::Money;

/// US dollars in cents.
pub fn usd(cents: i64) -> Money {
    Money {
        amount: cents,
        currency: "USD".into(),
    }
}

use crate::clock::Clock;
use crate::service::server::{self, Running};
use crate::service::Service;
use parley_core::PublicKey;
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
        let shop_service = Arc::new(Service::new(
            shop::Shop::new(),
            trusted.clone(),
            clock.clone(),
        ));
        let cal_service = Arc::new(Service::new(
            calendar::Calendar::new(clock.now()),
            trusted,
            clock,
        ));
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
