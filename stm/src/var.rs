//! The trait shared by the two kinds of transactional variable.
//!
//! [`TVar<T>`](crate::TVar) holds any `Clone` value behind an atomically swapped pointer;
//! [`TWord<T>`](crate::TWord) holds a small `Copy` value packed inline in one atomic word.
//! Both carry a TL2 versioned write-lock; [`Transaction::read`](crate::Transaction::read) and
//! [`Transaction::write`](crate::Transaction::write) take either through this trait. The trait
//! is sealed: the protocol's safety rests on how the two implementations publish values.

use crate::{StmError, Transaction};

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// A transactional variable: [`TVar`](crate::TVar) or [`TWord`](crate::TWord).
pub trait Var: sealed::Sealed {
    /// The type of the value it holds.
    type Value;

    #[doc(hidden)]
    fn tx_read<'env>(&'env self, tx: &mut Transaction<'env>) -> Result<Self::Value, StmError>;

    #[doc(hidden)]
    fn tx_write<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        value: Self::Value,
    ) -> Result<(), StmError>;

    /// Read, apply `f`, write: by default [`Var::tx_read`] then [`Var::tx_write`]; a `TWord`
    /// fuses the two so that the write set is searched once.
    #[doc(hidden)]
    #[inline]
    fn tx_modify<'env>(
        &'env self,
        tx: &mut Transaction<'env>,
        f: impl FnOnce(Self::Value) -> Self::Value,
    ) -> Result<(), StmError>
    where
        Self: Sized,
    {
        let v = self.tx_read(tx)?;
        self.tx_write(tx, f(v))
    }
}
